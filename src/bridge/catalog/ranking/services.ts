// Well-known services, products and channels a request may name ("copy the backups to Google
// Drive", "send a Teams message", "send an SMS"), and which of them a catalog knows: a request
// naming one that no configured server's name, description or tools mention asks for what no
// tool does: ranking.ts counts it as a part of the request no hit answers (every hit's score
// drops, ranking/score.ts), and the "nothing fits" note names it. Each entry
// is `Name` (its form: the name lower-cased) or `Name = form, form`; a form written with a
// capital is a common word too ("Linear", "Teams", "Zoom") and counts only when the request
// writes it with one, past its first word. Forms are matched with spaces, dots and dashes left
// out and names split at case joined again ("GitHub", "git hub" and "github" alike).
import { wordsOf } from '../../../shared/words.ts';

const SERVICES = [
  // Chat, mail, phone and meetings.
  'Slack',
  'Microsoft Teams = microsoft teams, ms teams, Teams',
  'Discord',
  'WhatsApp',
  'Telegram',
  'Signal = Signal',
  'WeChat',
  'Viber',
  'Skype',
  'iMessage',
  'Facebook Messenger = facebook messenger, Messenger',
  'Zoom = Zoom',
  'Google Meet',
  'Webex',
  'Mattermost',
  'Rocket.Chat',
  'SMS = sms, mms, text message, text messages',
  // An email as what is sent, not a field ("the user's email").
  'email = an email, by email, via email, this email, email to, emails to',
  'voicemail',
  'fax',
  'Gmail',
  'Outlook = Outlook, outlook.com, hotmail',
  'Yahoo Mail',
  'Proton Mail = proton mail, protonmail',
  'Twilio',
  'SendGrid',
  'Mailchimp',
  'Mailgun',
  // Social.
  'Twitter = twitter, tweet, tweets',
  'Facebook',
  'Instagram',
  'LinkedIn',
  'TikTok',
  'YouTube',
  'Reddit',
  'Pinterest',
  'Snapchat',
  'Tumblr',
  'Mastodon',
  'Bluesky',
  'Threads = Threads',
  'Twitch',
  'Substack',
  'Medium = Medium',
  // Documents, notes, tasks and storage.
  'Google Drive = google drive, gdrive',
  'Google Docs',
  'Google Sheets',
  'Google Slides',
  'Google Calendar = google calendar, gcal',
  'Google Keep',
  'Google Tasks',
  'Google Photos',
  'Google Analytics',
  'Google Ads',
  'Dropbox',
  'Box = Box',
  'OneDrive',
  'SharePoint',
  'iCloud = icloud, icloud drive',
  'OneNote',
  'Evernote',
  'Notion = Notion',
  'Obsidian = Obsidian',
  'Confluence',
  'Jira',
  'Trello',
  'Asana',
  'Linear = Linear',
  'ClickUp',
  'Basecamp',
  'Monday.com = monday.com',
  'Todoist',
  'Airtable',
  'Smartsheet',
  'Coda = Coda',
  'Miro',
  'Figma',
  'Canva',
  'Loom',
  'Calendly',
  'Zapier',
  'IFTTT',
  'Apple Notes',
  'Apple Reminders',
  'Apple Calendar',
  'Apple Health',
  'Apple Music',
  'Apple Maps',
  'Apple Pay',
  'Siri',
  'Alexa',
  'Google Home',
  'HomeKit',
  'SmartThings',
  'Philips Hue = philips hue, Hue',
  'Sonos',
  'Fitbit',
  'Strava',
  'Garmin',
  'Peloton',
  'MyFitnessPal',
  // Code, builds and hosting.
  'GitHub',
  'GitHub Actions',
  'GitLab',
  'Bitbucket',
  'Azure DevOps',
  'Jenkins',
  'CircleCI',
  'Travis CI',
  'Docker Hub',
  'Docker',
  'Kubernetes = kubernetes, k8s, kubectl',
  'Helm = Helm',
  'Terraform',
  'Ansible',
  'AWS = aws, amazon web services',
  'EC2',
  'S3',
  'AWS Lambda = aws lambda',
  'CloudWatch',
  'Azure',
  'Google Cloud = google cloud, gcp',
  'BigQuery',
  'Heroku',
  'Vercel',
  'Netlify',
  'Cloudflare',
  'DigitalOcean',
  'nginx',
  'Redis',
  'MongoDB = mongodb, mongo',
  'MySQL',
  'PostgreSQL = postgresql, postgres',
  'SQLite',
  'Elasticsearch',
  'Kafka',
  'RabbitMQ',
  'Snowflake = Snowflake',
  'Datadog',
  'Sentry',
  'PagerDuty',
  'Opsgenie',
  'Grafana',
  'Prometheus',
  'New Relic',
  'Splunk',
  'Okta',
  'Auth0',
  '1Password',
  'LastPass',
  'Bitwarden',
  'npm registry = npmjs',
  'PyPI',
  'Hugging Face',
  'OpenAI',
  'ChatGPT',
  'Google Maps',
  'Brave Search',
  // Business, payments and shopping.
  'Salesforce',
  'HubSpot',
  'Zendesk',
  'Intercom',
  'Freshdesk',
  'QuickBooks',
  'Xero',
  'Stripe = Stripe',
  'Shopify',
  'WooCommerce',
  'PayPal',
  'Venmo',
  'Zelle',
  'Cash App',
  'Wise = Wise',
  'Revolut',
  'Coinbase',
  'Binance',
  'Robinhood',
  'Amazon',
  'eBay',
  'Etsy',
  'Instacart',
  'DoorDash',
  'Uber Eats',
  'Grubhub',
  'Uber',
  'Lyft',
  'Airbnb',
  'Booking.com',
  'Expedia',
  'Tripadvisor',
  'Yelp',
  'OpenTable',
  'Kayak = Kayak',
  'Skyscanner',
  'Waze',
  // Media.
  'Spotify',
  'Netflix',
  'Hulu',
  'Disney+ = disney plus',
  'SoundCloud',
  'Audible',
  'Kindle',
  'Goodreads',
  'Photoshop',
  'Lightroom',
  'Premiere Pro',
] as const;

/** A service by its name. */
interface Service {
  name: string;
  /** The request must write it with a capital. */
  capitalized: boolean;
}

/** A form's key: its words joined ("google drive", "GoogleDrive", "google-drive" -> googledrive). */
function keyOf(words: readonly string[]): string {
  return words.join('');
}

interface Lexicon {
  forms: Map<string, Service>;
  /** Every beginning of a form's key: where a run of words may still become one. */
  prefixes: Set<string>;
  /** The most words a form takes. */
  longest: number;
}

let lexicon: Lexicon | undefined;

function servicesLexicon(): Lexicon {
  if (lexicon) return lexicon;
  const forms = new Map<string, Service>();
  const prefixes = new Set<string>();
  let longest = 1;
  for (const entry of SERVICES) {
    const [name, list] = entry.includes(' = ') ? entry.split(' = ') : [entry, entry.toLowerCase()];
    for (const form of list!.split(',').map((f) => f.trim())) {
      const words = wordsOf(form);
      const key = keyOf(words);
      forms.set(key, { name: name!, capitalized: form !== form.toLowerCase() });
      for (let i = 1; i <= key.length; i++) prefixes.add(key.slice(0, i));
      longest = Math.max(longest, words.length + 2);
    }
  }
  lexicon = { forms, prefixes, longest };
  return lexicon;
}

/**
 * The services a run of words names, the longest form first. `written`: whether the word at an
 * index is written with a capital (for the forms that are common words); without it (a
 * catalog's text, lower-cased) every form counts.
 */
function servicesIn(words: readonly string[], written?: (index: number) => boolean): Array<{ name: string; at: number; end: number }> {
  const { forms, prefixes, longest } = servicesLexicon();
  const found: Array<{ name: string; at: number; end: number }> = [];
  for (let i = 0; i < words.length; i++) {
    let key = '';
    let match: { name: string; end: number } | undefined;
    for (let j = i; j < words.length && j < i + longest; j++) {
      key += words[j]!;
      if (!prefixes.has(key)) break;
      const service = forms.get(key);
      if (!service) continue;
      let capitalized = true;
      for (let k = i; k <= j && written; k++) capitalized &&= written(k);
      if (!service.capitalized || capitalized) match = { name: service.name, end: j };
    }
    if (match) {
      found.push({ name: match.name, at: i, end: match.end });
      i = match.end;
    }
  }
  return found;
}

/** Stands for a value between a request's words: no form goes across it. */
const BREAK = '\u0000';

/** The services a request names ("send a Teams message to QA": Microsoft Teams), once each, in its order. */
export function servicesNamed(query: string): string[] {
  // Each word as written, to tell "Linear" (the service) from "linear".
  const written: boolean[] = [];
  const words: string[] = [];
  query.split(/\s+/).forEach((token, k) => {
    const bare = token.replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, '').replace(/['\u2019]s$/u, '');
    const tokenWords = wordsOf(bare);
    // A token with a digit or inner punctuation is a value (a path, a file, an address, a URL:
    // "facebook/react", "docker-compose.yml") unless it is a form itself ("EC2", "monday.com").
    if (/\p{N}|[^\p{L}\p{N}]/u.test(bare) && !servicesLexicon().forms.has(keyOf(tokenWords))) {
      words.push(BREAK);
      written.push(false);
      return;
    }
    const capital = k > 0 && /^\p{Lu}/u.test(bare);
    for (const word of tokenWords) {
      words.push(word);
      written.push(capital);
    }
  });
  return [...new Set(servicesIn(words, (index) => written[index]!).map((s) => s.name))];
}

/** The services the texts of a catalog mention (server names and descriptions, tool names and texts), in any form. */
export function servicesMentioned(texts: Iterable<readonly string[]>): Set<string> {
  const known = new Set<string>();
  for (const words of texts) for (const s of servicesIn(words)) known.add(s.name);
  return known;
}
