// A small client of Chromium's DevTools protocol over --remote-debugging-pipe (fd 3 carries
// commands to the browser, fd 4 its answers and events; each message is JSON ending in NUL).
//
//   const browser = await Browser.launch(['--headless=new', …]);
//   const page = await browser.newPage(url);  await page.evaluate('1 + 1');  browser.close();
import { spawnOwned } from './owned.mjs';

export class Browser {
  /// `prefix`: a command that runs the browser (`['ip', 'netns', 'exec', NS]`: on another host of a
  /// test LAN); it keeps descriptors 3 and 4.
  static async launch(args, { executable = 'chromium', log, prefix = [] } = {}) {
    const command = [...prefix, executable, '--remote-debugging-pipe', ...args];
    const child = spawnOwned(command[0], command.slice(1), { stdio: ['ignore', 'ignore', log ?? 'ignore', 'pipe', 'pipe'] });
    const browser = new Browser(child);
    await browser.send('Target.setDiscoverTargets', { discover: true });
    return browser;
  }
  constructor(child) {
    this.child = child; this.next = 1; this.waiting = new Map(); this.listeners = [];
    let buffer = Buffer.alloc(0);
    child.stdio[4].on('data', (chunk) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (let end; (end = buffer.indexOf(0)) >= 0;) {
        const message = JSON.parse(buffer.subarray(0, end).toString('utf8'));
        buffer = buffer.subarray(end + 1);
        if (message.id && this.waiting.has(message.id)) {
          const { resolve, reject } = this.waiting.get(message.id);
          this.waiting.delete(message.id);
          message.error ? reject(new Error(`${message.error.message} ${message.error.data ?? ''}`)) : resolve(message.result);
        } else {
          for (const listener of this.listeners) listener(message);
        }
      }
    });
    child.on('exit', (code) => { for (const { reject } of this.waiting.values()) reject(new Error(`chromium exited (${code})`)); });
  }
  send(method, params = {}, sessionId) {
    const id = this.next++;
    const message = { id, method, params };
    if (sessionId) message.sessionId = sessionId;
    this.child.stdio[3].write(JSON.stringify(message) + '\0');
    return new Promise((resolve, reject) => this.waiting.set(id, { resolve, reject }));
  }
  /// The next event `method` (of `sessionId`) for which `test` holds, within `ms`.
  waitFor(method, { sessionId, test = () => true, ms = 10000 } = {}) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => { remove(); reject(new Error(`no ${method} within ${ms} ms`)); }, ms);
      const listener = (m) => {
        if (m.method === method && (!sessionId || m.sessionId === sessionId) && test(m.params)) { remove(); clearTimeout(timer); resolve(m.params); }
      };
      const remove = () => { this.listeners = this.listeners.filter(l => l !== listener); };
      this.listeners.push(listener);
    });
  }
  /// `window`: in a window of its own, where no other page's tab can hide it.
  async newPage(url, { window = false } = {}) {
    const { targetId } = await this.send('Target.createTarget', { url: 'about:blank', newWindow: window });
    const { sessionId } = await this.send('Target.attachToTarget', { targetId, flatten: true });
    const page = new Page(this, sessionId, targetId);
    await page.send('Page.enable');
    await page.send('Runtime.enable');
    if (url) await page.navigate(url);
    return page;
  }
  close() { try { this.child.kill('SIGKILL'); } catch { /* gone */ } }
}

export class Page {
  constructor(browser, sessionId, targetId) { this.browser = browser; this.sessionId = sessionId; this.targetId = targetId; this.console = []; 
    browser.listeners.push((m) => {
      if (m.sessionId !== sessionId) return;
      if (m.method === 'Runtime.consoleAPICalled') this.console.push(m.params.args.map(a => a.value ?? a.description).join(' '));
      if (m.method === 'Runtime.exceptionThrown') this.console.push('exception: ' + (m.params.exceptionDetails.exception?.description ?? m.params.exceptionDetails.text));
    });
  }
  send(method, params) { return this.browser.send(method, params, this.sessionId); }
  async navigate(url) {
    const loaded = this.browser.waitFor('Page.loadEventFired', { sessionId: this.sessionId });
    await this.send('Page.navigate', { url });
    await loaded;
  }
  async evaluate(expression) {
    const { result, exceptionDetails } = await this.send('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true });
    if (exceptionDetails) throw new Error(`${expression}: ${exceptionDetails.exception?.description ?? exceptionDetails.text}`);
    return result.value;
  }
  /// A real click (a user gesture, which lets the page play sound) at the middle of `selector`.
  /// Returns the wall instant (ms) just before the button is released, when the click happens.
  async click(selector) {
    const box = await this.evaluate(`(() => { const e = document.querySelector(${JSON.stringify(selector)}); e.scrollIntoView({ block: 'center' }); const r = e.getBoundingClientRect(); return { x: r.x + r.width / 2, y: r.y + r.height / 2 }; })()`);
    await this.send('Input.dispatchMouseEvent', { type: 'mousePressed', x: box.x, y: box.y, button: 'left', clickCount: 1 });
    const at = performance.timeOrigin + performance.now();
    await this.send('Input.dispatchMouseEvent', { type: 'mouseReleased', x: box.x, y: box.y, button: 'left', clickCount: 1 });
    return at;
  }
  async type(selector, text) {
    await this.evaluate(`(() => { const e = document.querySelector(${JSON.stringify(selector)}); e.value = ''; e.focus(); })()`);
    await this.send('Input.insertText', { text });
  }
  async screenshot() { return Buffer.from((await this.send('Page.captureScreenshot', { format: 'png' })).data, 'base64'); }
}
