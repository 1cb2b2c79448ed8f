// One small driver interface over the three browser engines, for the browser check
// (Tools/web/browser.mjs) and the benchmark:
//   - chromium: the DevTools protocol over --remote-debugging-pipe (cdp.mjs);
//   - firefox:  WebDriver BiDi, which firefox-esr speaks itself (--remote-debugging-port);
//   - webkit:   W3C WebDriver (WebKitWebDriver's HTTP API) driving WebKitGTK's MiniBrowser,
//               under the Xvfb display the caller provides.
//
//   const browser = await launch('firefox', { work, log });
//   const page = await browser.newPage(url);  // newPage(url, { window: true }): in a window of its own
//   await page.evaluate('1 + 1'); await page.type('#name', 'tab'); const at = await page.click('#join');
//   await page.screenshot(); await page.hide(); await page.show(); await page.close(); browser.close();
//   await page.setFiles('#own-file', ['/path/film.webm']);  // as a person picks files in a file input
//   await launch('chromium', { work, trust: 'root.crt' });   // a CA the engine trusts (HTTPS, wss://)
//
// A page's `evaluate` returns the expression's value as JSON carries it (awaited when it is a
// promise). `click` is a real click (a user gesture: the page may start sound) and returns the
// wall instant (ms) just before its release. A page opened as a tab hides the window's page
// before it, as a person's browser does: two pages that are both watched each have a window.
// `hide` hides the page (its visibilityState becomes 'hidden': Firefox's puts a blank tab in
// front in its window; Chromium's and WebKit's minimize the window); `freeze`/`resume` exist only where the engine can
// freeze a page (Chromium: `page.canFreeze`).
import { spawnOwned } from './owned.mjs';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { Browser as CDPBrowser } from './cdp.mjs';

const wallMs = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/// The engines, as `--engine` names them.
export const engines = ['chromium', 'firefox', 'webkit'];

/// `trust`: a CA's certificate (PEM) the browser trusts as a person's would once it is installed:
/// in the NSS database the engine reads (Chromium's in $HOME/.pki/nssdb, Firefox's in its
/// profile), by NSS's certutil; Firefox then accepts no other certificate. Chromium and Firefox
/// only.
export async function launch(engine, { work, log, prefix = [], port = 19222, trust } = {}) {
  if (trust && engine === 'webkit') throw new Error('trust is for Chromium and Firefox (their NSS databases) only');
  switch (engine) {
    case 'chromium': return ChromiumBrowser.launch({ work, log, prefix, trust });
    case 'firefox': return FirefoxBrowser.launch({ work, log, prefix, port, trust });
    case 'webkit': return WebKitBrowser.launch({ work, log, prefix, port: port + 1 });
    default: throw new Error(`no engine ${engine} (one of ${engines.join(', ')})`);
  }
}

/// An expression wrapped so that every engine returns its value the same way: as JSON text.
const asJSON = (expression) =>
  `(async () => { const v = await (${expression}); return JSON.stringify(v === undefined ? null : v); })()`;

/// An NSS database in `folder` that trusts `ca` to name servers (certutil, from libnss3-tools).
function trustIn(folder, ca) {
  mkdirSync(folder, { recursive: true });
  if (!existsSync(`${folder}/cert9.db`)) execFileSync('certutil', ['-N', '-d', `sql:${folder}`, '--empty-password']);
  execFileSync('certutil', ['-A', '-d', `sql:${folder}`, '-n', 'coplay-test-ca', '-t', 'C,,', '-i', ca]);
}

// MARK: Chromium, over the DevTools protocol

class ChromiumBrowser {
  static async launch({ work, log, prefix, trust }) {
    const browser = new ChromiumBrowser();
    if (trust) {
      // Chromium on Linux reads the user's NSS database: a home of the run's own holds it.
      trustIn(`${work}/home-chromium/.pki/nssdb`, trust);
      prefix = [...prefix, 'env', `HOME=${work}/home-chromium`];
    }
    browser.cdp = await CDPBrowser.launch(['--headless=new', '--no-sandbox', `--user-data-dir=${work}/profile-chromium`,
      '--mute-audio', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--window-size=1200,1000'],
    { prefix });  // its own output is not kept (a stream for `log` must be open before the spawn)
    return browser;
  }
  async newPage(url, options) {
    const page = await this.cdp.newPage(url, options);
    return new ChromiumPage(this, page);
  }
  close() { this.cdp.close(); }
}

class ChromiumPage {
  constructor(browser, page) { this.browser = browser; this.page = page; this.canFreeze = true; }
  evaluate(expression) { return this.page.evaluate(expression); }
  click(selector) { return this.page.click(selector); }
  type(selector, text) { return this.page.type(selector, text); }
  async setFiles(selector, files) {
    const { root } = await this.page.send('DOM.getDocument', { depth: 0 });
    const { nodeId } = await this.page.send('DOM.querySelector', { nodeId: root.nodeId, selector });
    await this.page.send('DOM.setFileInputFiles', { nodeId, files });
  }
  screenshot() { return this.page.screenshot(); }
  async hide() { await this.windowState('minimized'); }
  async show() {
    await this.windowState('normal');
    await this.browser.cdp.send('Target.activateTarget', { targetId: this.page.targetId });
  }
  /// Minimized, a window's page is hidden (a tab put in front would open in whichever window was
  /// last in front, and hide another page's).
  async windowState(windowState) {
    const { windowId } = await this.browser.cdp.send('Browser.getWindowForTarget', { targetId: this.page.targetId });
    await this.browser.cdp.send('Browser.setWindowBounds', { windowId, bounds: { windowState } });
  }
  freeze() { return this.page.send('Page.setWebLifecycleState', { state: 'frozen' }); }
  async resume() {
    await this.page.send('Page.setWebLifecycleState', { state: 'active' });
    await this.show();
  }
  close() { return this.page.send('Page.close').catch(() => {}); }
  get console() { return this.page.console; }
}

// MARK: Firefox, over WebDriver BiDi

class FirefoxBrowser {
  static async launch({ work, log, prefix, port, trust }) {
    const profile = `${work}/profile-firefox`;
    mkdirSync(profile, { recursive: true });
    if (trust) trustIn(profile, trust);
    // A profile that asks nothing and fetches nothing: no first run, no updates, no telemetry.
    writeFileSync(`${profile}/user.js`, [
      'user_pref("browser.shell.checkDefaultBrowser", false);',
      'user_pref("browser.startup.homepage_override.mstone", "ignore");',
      'user_pref("datareporting.policy.dataSubmissionEnabled", false);',
      'user_pref("toolkit.telemetry.reportingpolicy.firstRun", false);',
      'user_pref("app.update.disabledForTesting", true);',
      'user_pref("browser.tabs.remote.separatePrivilegedContentProcess", false);',
      'user_pref("network.captive-portal-service.enabled", false);',
      'user_pref("network.connectivity-service.enabled", false);',
      'user_pref("browser.safebrowsing.update.enabled", false);',
      'user_pref("media.volume_scale", "0.0");',
    ].join('\n') + '\n');
    const command = [...prefix, 'firefox-esr', '--headless', '--no-remote', '--profile', profile,
      '--remote-debugging-port', String(port), '--width', '1200', '--height', '1000', 'about:blank'];
    const child = spawnOwned(command[0], command.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
    const browser = new FirefoxBrowser(child);
    // Firefox says where WebDriver BiDi listens once it is up.
    const url = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('firefox-esr did not start WebDriver BiDi within 30 s')), 30000);
      let text = '';
      child.stderr.on('data', (d) => {
        text += d;
        log?.write?.(d);
        const m = text.match(/WebDriver BiDi listening on (ws:\/\/\S+)/);
        if (m) { clearTimeout(timer); resolve(m[1]); }
      });
      child.on('exit', (code) => reject(new Error(`firefox-esr exited (${code}): ${text.slice(-500)}`)));
    });
    await browser.connect(`${url.replace(/\/$/, '')}/session`);
    await browser.send('session.new', { capabilities: { alwaysMatch: { acceptInsecureCerts: !trust } } });
    await browser.send('session.subscribe', { events: ['log.entryAdded'] });
    return browser;
  }
  constructor(child) { this.child = child; this.next = 1; this.waiting = new Map(); this.console = []; }
  connect(url) {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(url);
      this.socket = socket;
      socket.onopen = () => resolve();
      socket.onerror = (e) => reject(new Error(`cannot reach WebDriver BiDi at ${url}: ${e.message ?? e}`));
      socket.onmessage = ({ data }) => {
        const m = JSON.parse(data);
        if (m.id && this.waiting.has(m.id)) {
          const { resolve, reject } = this.waiting.get(m.id);
          this.waiting.delete(m.id);
          m.type === 'error' ? reject(new Error(`${m.error}: ${m.message}`)) : resolve(m.result);
        } else if (m.method === 'log.entryAdded' && (m.params.type === 'javascript' || m.params.level === 'error')) {
          this.console.push(`exception: ${m.params.text}`);
        }
      };
    });
  }
  send(method, params = {}) {
    const id = this.next++;
    this.socket.send(JSON.stringify({ id, method, params }));
    return new Promise((resolve, reject) => this.waiting.set(id, { resolve, reject }));
  }
  async newPage(url, { window = false } = {}) {
    const { context } = await this.send('browsingContext.create', { type: window ? 'window' : 'tab' });
    const page = new BiDiPage(this, context);
    if (url) await page.navigate(url);
    return page;
  }
  close() { try { this.child.kill('SIGKILL'); } catch { /* gone */ } }
}

class BiDiPage {
  constructor(browser, context) { this.browser = browser; this.context = context; this.canFreeze = false; }
  get console() { return this.browser.console; }
  navigate(url) { return this.browser.send('browsingContext.navigate', { context: this.context, url, wait: 'complete' }); }
  async evaluate(expression) {
    const r = await this.browser.send('script.evaluate', { expression: asJSON(expression), target: { context: this.context },
      awaitPromise: true, userActivation: false });
    if (r.type === 'exception') throw new Error(`${expression}: ${r.exceptionDetails?.text}`);
    return JSON.parse(r.result.value);
  }
  async click(selector) {
    const box = await this.evaluate(`(() => { const e = document.querySelector(${JSON.stringify(selector)}); e.scrollIntoView({ block: 'center' }); const r = e.getBoundingClientRect(); return { x: Math.round(r.x + r.width / 2), y: Math.round(r.y + r.height / 2) }; })()`);
    await this.browser.send('input.performActions', { context: this.context, actions: [{ type: 'pointer', id: 'mouse',
      parameters: { pointerType: 'mouse' }, actions: [{ type: 'pointerMove', x: box.x, y: box.y }, { type: 'pointerDown', button: 0 }] }] });
    const at = wallMs();
    await this.browser.send('input.performActions', { context: this.context, actions: [{ type: 'pointer', id: 'mouse',
      parameters: { pointerType: 'mouse' }, actions: [{ type: 'pointerUp', button: 0 }] }] });
    return at;
  }
  async type(selector, text) {
    await this.evaluate(`(() => { const e = document.querySelector(${JSON.stringify(selector)}); e.value = ''; e.focus(); })()`);
    await this.browser.send('input.performActions', { context: this.context, actions: [{ type: 'key', id: 'keyboard',
      actions: [...text].flatMap((c) => [{ type: 'keyDown', value: c }, { type: 'keyUp', value: c }]) }] });
  }
  async setFiles(selector, files) {
    const r = await this.browser.send('script.evaluate', { expression: `document.querySelector(${JSON.stringify(selector)})`,
      target: { context: this.context }, awaitPromise: false, resultOwnership: 'root' });
    if (r.type === 'exception' || !r.result?.sharedId) throw new Error(`no element ${selector}`);
    await this.browser.send('input.setFiles', { context: this.context, element: { sharedId: r.result.sharedId }, files });
  }
  async screenshot() {
    const { data } = await this.browser.send('browsingContext.captureScreenshot', { context: this.context });
    return Buffer.from(data, 'base64');
  }
  async hide() {
    const { context } = await this.browser.send('browsingContext.create', { type: 'tab', referenceContext: this.context });
    this.blank = context;
    await this.browser.send('browsingContext.activate', { context });
  }
  async show() {
    await this.browser.send('browsingContext.activate', { context: this.context });
    if (this.blank) await this.browser.send('browsingContext.close', { context: this.blank }).catch(() => {});
    this.blank = null;
  }
  close() { return this.browser.send('browsingContext.close', { context: this.context }).catch(() => {}); }
}

// MARK: WebKit, over W3C WebDriver

class WebKitBrowser {
  static async launch({ log, prefix, port }) {
    const command = [...prefix, 'WebKitWebDriver', `--port=${port}`, '--host=127.0.0.1'];
    const child = spawnOwned(command[0], command.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr.on('data', (d) => log?.write?.(d));
    const browser = new WebKitBrowser(child, `http://127.0.0.1:${port}`);
    const ready = Date.now() + 20000;
    for (;;) {
      try { await browser.http('GET', '/status'); break; } catch (e) {
        if (Date.now() > ready) throw new Error(`WebKitWebDriver did not answer within 20 s: ${e.message}`);
        await sleep(100);
      }
    }
    const minibrowser = ['/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser', '/usr/lib/x86_64-linux-gnu/webkitgtk-6.0/MiniBrowser']
      .find((p) => existsSync(p));
    const session = await browser.http('POST', '/session', { capabilities: { alwaysMatch: {
      'webkitgtk:browserOptions': { binary: minibrowser ?? '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser', args: ['--automation'] },
    } } });
    browser.session = session.sessionId;
    browser.spare.push(await browser.http('GET', `/session/${browser.session}/window`));
    return browser;
  }
  constructor(child, base) { this.child = child; this.base = base; this.console = []; this.spare = []; }
  async http(method, path, body) {
    const response = await fetch(this.base + path, { method, headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body) });
    const json = await response.json();
    if (!response.ok || json.value?.error) throw new Error(`${method} ${path}: ${json.value?.error} ${json.value?.message ?? ''}`);
    return json.value;
  }
  s(path) { return `/session/${this.session}${path}`; }
  /// One page at a time is current in W3C WebDriver: every call on a page switches to its window.
  async switchTo(handle) {
    if (this.current === handle) return;
    await this.http('POST', this.s('/window'), { handle });
    this.current = handle;
  }
  async newPage(url) {  // a new tab is a new window in MiniBrowser: `window` is its way already
    // A page closed is kept blank for the next (closing a session's last window ends the session).
    const handle = this.spare.pop() ?? (await this.http('POST', this.s('/window/new'), { type: 'tab' })).handle;
    const page = new WebDriverPage(this, handle);
    if (url) await page.navigate(url);
    return page;
  }
  close() {
    this.http('DELETE', this.s('')).catch(() => {}).finally(() => { try { this.child.kill('SIGKILL'); } catch { /* gone */ } });
  }
}

class WebDriverPage {
  constructor(browser, handle) { this.browser = browser; this.handle = handle; this.canFreeze = false; }
  get console() { return this.browser.console; }
  async call(method, path, body) {
    await this.browser.switchTo(this.handle);
    return this.browser.http(method, this.browser.s(path), body);
  }
  async navigate(url) { await this.call('POST', '/url', { url }); }
  async evaluate(expression) {
    const script = `const done = arguments[arguments.length - 1];
      ${asJSON(expression)}.then(done, (e) => done(JSON.stringify({ __thrown: String(e && e.message || e) })));`;
    const text = await this.call('POST', '/execute/async', { script, args: [] });
    const value = JSON.parse(text);
    if (value && typeof value === 'object' && '__thrown' in value) throw new Error(`${expression}: ${value.__thrown}`);
    return value;
  }
  async element(selector) {
    const found = await this.call('POST', '/element', { using: 'css selector', value: selector });
    return Object.values(found)[0];
  }
  async click(selector) {
    const id = await this.element(selector);
    const at = wallMs();
    await this.call('POST', `/element/${id}/click`, {});
    return at;
  }
  async type(selector, text) {
    const id = await this.element(selector);
    await this.call('POST', `/element/${id}/clear`, {});
    await this.call('POST', `/element/${id}/value`, { text });
  }
  async setFiles(selector, files) {
    const id = await this.element(selector);
    await this.call('POST', `/element/${id}/value`, { text: files.join('\n') });
  }
  async screenshot() { return Buffer.from(await this.call('GET', '/screenshot'), 'base64'); }
  /// MiniBrowser keeps a tab behind another one visible (a new tab is a new window there), but a
  /// minimized window's page is hidden, as a phone's in the background: hide minimizes it, show
  /// maximizes it again (W3C WebDriver's window commands).
  async hide() { await this.call('POST', '/window/minimize', {}); }
  async show() {
    // WebKitWebDriver once answered a maximize with "unknown error" (one run in the eight of
    // 2026-11-28 afternoon), and the check failed there: it is asked once more.
    try { await this.call('POST', '/window/maximize', {}); } catch {
      await new Promise((r) => setTimeout(r, 300));
      await this.call('POST', '/window/maximize', {});
    }
  }
  async close() {
    await this.navigate('about:blank').catch(() => {});
    this.browser.spare.push(this.handle);
  }
}
