// records.js: a session's run records checked in the page, as `hull verify` checks them: each
// record's recordSha256 recomputed with WebCrypto's SHA-256 over the plimsoll record encoding
// (docs/API.md, "Checking the chain in a browser"), and the chain: sequences 1, 2, 3... in one
// session, each previousSha256 the recordSha256 before it ("" for the first).

const te = new TextEncoder();

// value(x): x's length as 8 bytes big-endian, then its bytes.
function value(parts, bytes) {
  const len = new Uint8Array(8);
  let n = bytes.length;
  for (let i = 7; i >= 0; i--) {
    len[i] = n % 256;
    n = Math.floor(n / 256);
  }
  parts.push(len, bytes);
}

// A field of a ProtoJSON record, lowerCamelCase or snake_case.
function field(rec, snake) {
  if (snake in rec) return rec[snake];
  const camel = snake.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());
  return rec[camel];
}

function str(v) {
  return v === undefined || v === null ? '' : String(v);
}

function int(v) {
  if (v === undefined || v === null || v === '') return '0';
  const s = String(v);
  if (!/^\d+$/.test(s)) throw new Error(`not a non-negative integer: ${s.slice(0, 40)}`);
  return BigInt(s).toString();
}

function hex(buf) {
  return Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, '0')).join('');
}

// The recordSha256 a record should have.
export async function recordDigest(rec) {
  const version = Number(int(rec.version));
  if (![1, 2, 3].includes(version)) throw new Error(`unknown record version ${rec.version}`);
  const parts = [];
  value(parts, te.encode(`plimsoll.run-record.v${version}`));
  const add = (name, content) => {
    value(parts, te.encode(name));
    value(parts, te.encode(content));
  };
  add('request_sha256', str(field(rec, 'request_sha256')));
  add('result_sha256', str(field(rec, 'result_sha256')));
  if (version === 3) add('unanswered', str(field(rec, 'unanswered')));
  for (const f of ['provider', 'isolation', 'environment', 'policy']) add(f, str(field(rec, f)));
  if (version >= 2) {
    add('software_identity', str(field(rec, 'software_identity')));
    add('software_rule_id', str(field(rec, 'software_rule_id')));
  }
  for (const f of ['started_unix_ms', 'ended_unix_ms']) add(f, int(field(rec, f)));
  add('session', str(field(rec, 'session')));
  add('sequence', int(field(rec, 'sequence')));
  add('previous_sha256', str(field(rec, 'previous_sha256')));
  let total = 0;
  for (const p of parts) total += p.length;
  const all = new Uint8Array(total);
  let o = 0;
  for (const p of parts) {
    all.set(p, o);
    o += p.length;
  }
  return hex(await crypto.subtle.digest('SHA-256', all));
}

// Check the records of GET /v1/sessions/{id}/records (each {sandbox, line, raw, entry}), one
// chain per sandbox. Returns one verdict per record: {ok, problem} in the same order, and
// {chains, broken}.
export async function verifyRecords(records) {
  const verdicts = [];
  const state = new Map(); // sandbox -> {seq, last, broken}
  let broken = 0;
  for (const r of records) {
    const v = { ok: true, problem: '' };
    const rec = r.entry && r.entry.record;
    const st = state.get(r.sandbox) || { seq: 0, last: '', broken: false };
    state.set(r.sandbox, st);
    try {
      if (!rec) throw new Error('the line is not a record (a cut log?)');
      const want = await recordDigest(rec);
      const have = str(field(rec, 'record_sha256'));
      if (want !== have) throw new Error(`recordSha256 ${have.slice(0, 12)}… does not match its fields (${want.slice(0, 12)}…)`);
      const seq = Number(int(field(rec, 'sequence')));
      if (str(field(rec, 'session')) !== r.sandbox) throw new Error('its session is not the log\'s');
      if (seq !== st.seq + 1) throw new Error(`sequence ${seq} where ${st.seq + 1} was due`);
      if (str(field(rec, 'previous_sha256')) !== st.last) throw new Error('previousSha256 is not the digest of the record before');
      st.seq = seq;
      st.last = have;
    } catch (e) {
      v.ok = false;
      v.problem = e.message;
      if (!st.broken) broken++;
      st.broken = true;
      // go on from this record, so one bad line does not hide the rest
      if (rec) {
        st.seq = Number(int(field(rec, 'sequence') || 0)) || st.seq + 1;
        st.last = str(field(rec, 'record_sha256'));
      }
    }
    verdicts.push(v);
  }
  return { verdicts, chains: state.size, broken };
}
