// Preloaded (node --import) into third-party test servers that listen on a port alone: binds
// them to 127.0.0.1, so that tests never open a port beyond loopback.
import net from 'node:net';

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = args[0];
  if ((typeof port === 'number' || (typeof port === 'string' && /^\d+$/.test(port))) && typeof args[1] !== 'string')
    args.splice(1, 0, '127.0.0.1');
  if (port && typeof port === 'object' && !('path' in port) && !port.host) args[0] = { ...port, host: '127.0.0.1' };
  return listen.apply(this, args);
};
