/*
 * app.js: the shardstore console. Read-only: it only GETs
 * /_/console/api/summary (every 2 s) and /_/console/api/buckets (every
 * 10 s), signed with AWS SigV4 like any admin client.
 *
 * Login: the secret key is read from the form once, used to derive the
 * SigV4 signing keys of today and tomorrow (UTC) for this server's region,
 * and dropped (the field is cleared). Only those day-scoped keys live on,
 * in this closure: nothing goes to localStorage, sessionStorage or a
 * cookie, nothing secret goes in a URL, and a reload logs out. When both
 * days have passed the page asks for the secret again.
 *
 * SHA-256 and HMAC are implemented here (FIPS 180-4, RFC 2104) rather than
 * taken from crypto.subtle, which browsers offer only on https:// and
 * localhost pages: the console must also work over plain HTTP on a LAN.
 * Everything shown goes through textContent, never innerHTML.
 */
'use strict';

(function () {
  // ---- SHA-256 and HMAC-SHA256 on Uint8Array ------------------------------
  const K = new Uint32Array([
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2,
  ]);

  function ror(x, n) {
    return (x >>> n) | (x << (32 - n));
  }

  function sha256(msg) {
    const n = msg.length;
    const total = Math.ceil((n + 9) / 64) * 64;
    const m = new Uint8Array(total);
    m.set(msg);
    m[n] = 0x80;
    const dv = new DataView(m.buffer);
    dv.setUint32(total - 8, Math.floor(n / 0x20000000));
    dv.setUint32(total - 4, (n * 8) >>> 0);
    const h = new Uint32Array([
      0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
      0x5be0cd19,
    ]);
    const w = new Uint32Array(64);
    for (let off = 0; off < total; off += 64) {
      for (let i = 0; i < 16; i++) w[i] = dv.getUint32(off + 4 * i);
      for (let i = 16; i < 64; i++) {
        const x = w[i - 15];
        const y = w[i - 2];
        const s0 = ror(x, 7) ^ ror(x, 18) ^ (x >>> 3);
        const s1 = ror(y, 17) ^ ror(y, 19) ^ (y >>> 10);
        w[i] = (w[i - 16] + s0 + w[i - 7] + s1) | 0;
      }
      let a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
      for (let i = 0; i < 64; i++) {
        const t1 = (k + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i]) | 0;
        const t2 = ((ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
        k = g;
        g = f;
        f = e;
        e = (d + t1) | 0;
        d = c;
        c = b;
        b = a;
        a = (t1 + t2) | 0;
      }
      h[0] += a;
      h[1] += b;
      h[2] += c;
      h[3] += d;
      h[4] += e;
      h[5] += f;
      h[6] += g;
      h[7] += k;
    }
    const out = new Uint8Array(32);
    const ov = new DataView(out.buffer);
    for (let i = 0; i < 8; i++) ov.setUint32(4 * i, h[i]);
    return out;
  }

  function hmac(key, msg) {
    if (key.length > 64) key = sha256(key);
    const ipad = new Uint8Array(64 + msg.length);
    const opad = new Uint8Array(64 + 32);
    for (let i = 0; i < 64; i++) {
      const kb = i < key.length ? key[i] : 0;
      ipad[i] = kb ^ 0x36;
      opad[i] = kb ^ 0x5c;
    }
    ipad.set(msg, 64);
    opad.set(sha256(ipad), 64);
    return sha256(opad);
  }

  const utf8 = (s) => new TextEncoder().encode(s);
  const hex = (bytes) => Array.from(bytes, (x) => x.toString(16).padStart(2, '0')).join('');
  const EMPTY_SHA256 = hex(sha256(new Uint8Array(0)));

  // ---- Session: access key, region and day-scoped signing keys ------------
  const regionMeta = document.querySelector('meta[name="shardstore-region"]');
  let session = null; // {accessKey, region, keys: {YYYYMMDD: Uint8Array}}
  const timers = [];

  function date8(d) {
    return d.toISOString().slice(0, 10).replace(/-/g, '');
  }

  function deriveKeys(secret, region) {
    const keys = {};
    const now = Date.now();
    for (const d of [new Date(now), new Date(now + 86400000)]) {
      const day = date8(d);
      let k = hmac(utf8('AWS4' + secret), utf8(day));
      k = hmac(k, utf8(region));
      k = hmac(k, utf8('s3'));
      keys[day] = hmac(k, utf8('aws4_request'));
    }
    return keys;
  }

  class ApiError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  // GETs 'path' (no query) signed with SigV4; resolves to the parsed JSON.
  async function apiGet(path) {
    if (!session) throw new ApiError(0, 'NoSession', 'not logged in');
    const amzDate = new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
    const day = amzDate.slice(0, 8);
    const key = session.keys[day];
    if (!key) throw new ApiError(0, 'SessionExpired', 'the session expired: log in again');
    const signed = 'host;x-amz-content-sha256;x-amz-date';
    const canonical = ['GET', path, '', 'host:' + location.host,
      'x-amz-content-sha256:' + EMPTY_SHA256, 'x-amz-date:' + amzDate, '', signed,
      EMPTY_SHA256].join('\n');
    const scope = day + '/' + session.region + '/s3/aws4_request';
    const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, hex(sha256(utf8(canonical)))].join('\n');
    const auth = 'AWS4-HMAC-SHA256 Credential=' + session.accessKey + '/' + scope +
      ', SignedHeaders=' + signed + ', Signature=' + hex(hmac(key, utf8(toSign)));
    const resp = await fetch(path, {
      method: 'GET',
      cache: 'no-store',
      credentials: 'omit',
      headers: {
        'Authorization': auth,
        'x-amz-date': amzDate,
        'x-amz-content-sha256': EMPTY_SHA256,
      },
    });
    const text = await resp.text();
    if (!resp.ok) {
      const code = (/<Code>([^<]*)<\/Code>/.exec(text) || [])[1] || 'HTTP' + resp.status;
      const msg = (/<Message>([^<]*)<\/Message>/.exec(text) || [])[1] || '';
      throw new ApiError(resp.status, code, code + (msg ? ': ' + msg : ''));
    }
    return JSON.parse(text);
  }

  // ---- Formatting ----------------------------------------------------------
  const $ = (id) => document.getElementById(id);

  function fmtBytes(n) {
    if (n === null || n === undefined) return '?';
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
    let i = 0;
    let v = n;
    while (v >= 1024 && i < units.length - 1) {
      v /= 1024;
      i++;
    }
    return (i ? v.toFixed(1) : String(v)) + ' ' + units[i];
  }

  function fmtDuration(s) {
    s = Math.floor(s);
    const d = Math.floor(s / 86400);
    const h = Math.floor((s % 86400) / 3600);
    const m = Math.floor((s % 3600) / 60);
    const parts = [];
    if (d) parts.push(d + 'd');
    if (d || h) parts.push(h + 'h');
    if (d || h || m) parts.push(m + 'm');
    parts.push((s % 60) + 's');
    return parts.join(' ');
  }

  function fmtRate(v) {
    return v >= 100 ? v.toFixed(0) : v.toFixed(v >= 10 ? 1 : 2);
  }

  function cell(tr, text, cls) {
    const td = document.createElement('td');
    td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
  }

  function fillRows(tbody, rows) {
    tbody.replaceChildren(...rows);
  }

  // ---- Graphs on <canvas> --------------------------------------------------
  const HISTORY = 90; // points kept (3 minutes at one per 2 s)
  let samples = []; // {t (ms), requests, bytesIn, bytesOut}
  const rates = {req: [], inMiB: [], outMiB: []};

  function pushSample(sum) {
    const s = {t: sum.now_ms, requests: sum.counters.requests, bytesIn: sum.counters.bytes_in,
      bytesOut: sum.counters.bytes_out};
    const prev = samples[samples.length - 1];
    samples = [s];
    if (!prev || s.t <= prev.t || s.requests < prev.requests) return; // restarted server
    const dt = (s.t - prev.t) / 1000;
    const push = (arr, v) => {
      arr.push(v);
      if (arr.length > HISTORY) arr.shift();
    };
    push(rates.req, (s.requests - prev.requests) / dt);
    push(rates.inMiB, (s.bytesIn - prev.bytesIn) / dt / 1048576);
    push(rates.outMiB, (s.bytesOut - prev.bytesOut) / dt / 1048576);
  }

  function drawGraph(canvas, series) {
    const ctx = canvas.getContext('2d');
    const w = canvas.width;
    const h = canvas.height;
    const pad = 4;
    ctx.clearRect(0, 0, w, h);
    let max = 0;
    for (const s of series) for (const v of s.data) max = Math.max(max, v);
    max = max > 0 ? max * 1.15 : 1;
    ctx.strokeStyle = '#e3e7ee';
    ctx.lineWidth = 1;
    for (let i = 1; i < 4; i++) {
      const y = Math.round((h * i) / 4) + 0.5;
      ctx.beginPath();
      ctx.moveTo(0, y);
      ctx.lineTo(w, y);
      ctx.stroke();
    }
    ctx.fillStyle = '#5b6678';
    ctx.font = '11px sans-serif';
    ctx.fillText('max ' + fmtRate(max), pad, 12);
    for (const s of series) {
      if (s.data.length < 2) continue;
      ctx.strokeStyle = s.color;
      ctx.lineWidth = 2;
      ctx.beginPath();
      s.data.forEach((v, i) => {
        const x = w - (s.data.length - 1 - i) * (w / (HISTORY - 1));
        const y = h - pad - (v / max) * (h - 2 * pad);
        if (i === 0) ctx.moveTo(x, y);
        else ctx.lineTo(x, y);
      });
      ctx.stroke();
    }
  }

  function last(arr) {
    return arr.length ? arr[arr.length - 1] : 0;
  }

  // ---- Views ---------------------------------------------------------------
  function showSummary(sum) {
    $('version').textContent = sum.version;
    const ok = sum.status === 'ok';
    $('health').textContent = sum.status;
    $('health').className = 'badge ' + (ok ? 'ok' : 'bad');
    $('health-text').textContent = ok ? 'serving' : sum.status;
    $('uptime').textContent = fmtDuration(sum.uptime_s);
    $('in-flight').textContent = String(sum.in_flight);
    $('requests').textContent = sum.counters.requests + ' (' + sum.counters.errors_4xx +
      ' 4xx, ' + sum.counters.errors_5xx + ' 5xx)';
    const used = sum.storage.total_bytes - Math.min(sum.storage.total_bytes, sum.storage.free_bytes);
    $('storage').textContent = fmtBytes(used) + ' of ' + fmtBytes(sum.storage.total_bytes) +
      ' (' + sum.storage.volumes + ' volumes)';
    $('index-map').textContent = fmtBytes(sum.index.map_used_bytes) + ' of ' +
      fmtBytes(sum.index.map_size_bytes);

    pushSample(sum);
    drawGraph($('rate-graph'), [{data: rates.req, color: '#2e8b57'}]);
    drawGraph($('tput-graph'), [{data: rates.inMiB, color: '#2f6fd6'},
      {data: rates.outMiB, color: '#d6812f'}]);
    $('rate-graph').dataset.points = String(rates.req.length);
    $('rate-now').textContent = '(now ' + fmtRate(last(rates.req)) + ')';
    $('tput-now').textContent = '(now ' + fmtRate(last(rates.inMiB)) + ' / ' +
      fmtRate(last(rates.outMiB)) + ')';

    fillRows($('errors').tBodies[0], sum.recent_errors.map((e) => {
      const tr = document.createElement('tr');
      cell(tr, e.time.replace('T', ' ').replace('Z', ''));
      cell(tr, e.op);
      cell(tr, e.bucket);
      cell(tr, e.key + (e.key_cut ? '…' : ''), 'key');
      cell(tr, String(e.status), 'num');
      cell(tr, e.code || '');
      cell(tr, e.request_id);
      return tr;
    }));

    const lc = sum.lifecycle;
    const rows = [
      ['Background interval', lc.interval_s ? fmtDuration(lc.interval_s) : 'off (runs on demand)'],
      ['Passes', String(lc.passes)],
      ['Last pass ended', lc.last_pass_end ? lc.last_pass_end + ' (' + lc.last_pass_ms + ' ms)' : 'never'],
      ['Objects scanned', String(lc.objects_scanned)],
      ['Objects expired', lc.objects_expired + ' (' + fmtBytes(lc.bytes_expired) + ')'],
      ['Uploads aborted', String(lc.uploads_aborted)],
      ['Errors', String(lc.errors)],
    ];
    fillRows($('lifecycle').tBodies[0], rows.map(([k, v]) => {
      const tr = document.createElement('tr');
      cell(tr, k);
      cell(tr, v);
      return tr;
    }));
  }

  function showBuckets(res) {
    fillRows($('buckets').tBodies[0], res.buckets.map((b) => {
      const tr = document.createElement('tr');
      const more = b.truncated ? '+' : '';
      cell(tr, b.name);
      cell(tr, b.objects === null ? '?' : b.objects + more, 'num');
      cell(tr, b.bytes === null ? '?' : fmtBytes(b.bytes) + more, 'num');
      cell(tr, b.created ? b.created.replace('T', ' ').replace('Z', '') : '');
      cell(tr, b.public_read ? 'yes' : 'no');
      return tr;
    }));
    const notes = [];
    if (res.buckets.some((b) => b.truncated))
      notes.push('"+": counted up to ' + res.scan_max_per_bucket +
        ' objects per bucket (the console bounds its scan).');
    if (res.buckets_truncated) notes.push('Only the first ' + res.buckets.length + ' buckets are shown.');
    $('buckets-note').textContent = notes.join(' ');
  }

  // ---- Polling and login ---------------------------------------------------
  async function refresh(what) {
    try {
      if (what === 'summary') showSummary(await apiGet('/_/console/api/summary'));
      else showBuckets(await apiGet('/_/console/api/buckets'));
      return true;
    } catch (err) {
      if (err instanceof ApiError && (err.status === 403 || err.status === 401 ||
          err.code === 'SessionExpired'))
        logout(err.message);
      return false;
    }
  }

  function logout(message) {
    session = null;
    while (timers.length) clearInterval(timers.pop());
    samples = [];
    rates.req = [];
    rates.inMiB = [];
    rates.outMiB = [];
    for (const id of ['buckets', 'errors', 'lifecycle']) $(id).tBodies[0].replaceChildren();
    $('dashboard').hidden = true;
    $('logout').hidden = true;
    $('login-panel').hidden = false;
    $('login-error').textContent = message || '';
    document.body.dataset.state = 'login';
  }

  async function login(ev) {
    ev.preventDefault();
    const accessKey = $('access-key').value.trim();
    const secretField = $('secret-key');
    const region = (regionMeta && regionMeta.content) || 'us-east-1';
    session = {accessKey, region, keys: deriveKeys(secretField.value, region)};
    secretField.value = '';
    $('login-error').textContent = '';
    $('login-button').disabled = true;
    try {
      showSummary(await apiGet('/_/console/api/summary'));
    } catch (err) {
      $('login-button').disabled = false;
      logout('Login failed: ' + err.message);
      return;
    }
    $('login-button').disabled = false;
    $('login-panel').hidden = true;
    $('dashboard').hidden = false;
    $('logout').hidden = false;
    await refresh('buckets');
    document.body.dataset.state = 'dashboard';
    timers.push(setInterval(() => refresh('summary'), 2000));
    timers.push(setInterval(() => refresh('buckets'), 10000));
  }

  $('login').addEventListener('submit', login);
  $('logout').addEventListener('click', () => logout(''));
})();
