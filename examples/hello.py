# A first run in the sandbox: state, top-level await, and proof of the locks.
import asyncio, os, platform, socket

print(f"Python {platform.python_version()} as uid {os.getuid()} in {os.getcwd()}")
print("network interfaces:", [name for _, name in socket.if_nameindex()])
try:
    open("/etc/hacked", "w")
except OSError as error:
    print("writing /etc:", error.strerror)


async def square(n):
    await asyncio.sleep(0.1)
    return n * n

await asyncio.gather(*(square(n) for n in range(5)))
