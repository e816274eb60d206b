// The people of a trial: they read the questions ringback texted them and answer by text while
// the trial's faults last, as Twilio delivers messages to `ringback serve`'s inbound webhook
// (signed, each message posted 1-3 times and again while no answer comes, some again late); a
// ladder's recipient drawn silent leaves the answer to a next person, who may answer its text; a
// person with another question answers it once a ladder reached them (or 15 s on);
// strangers write too, one texts STOP (and START after it), and a forged post comes. Checked
// at rest: every message Twilio delivered is on the replies queue once, for the run it answers
// (or asked back, or unmatched for a stranger, or an opt-out keyword), never another run's; the
// opt-out is recorded while the last keyword is STOP; a forged post adds nothing.
'use strict';

const twilio = require('twilio');
const { AUTH_TOKEN, ACCOUNT_SID } = require('../drill/lab');
const { messageSid, inboundParams, INBOUND_PATH } = require('../harness/inbound');
const { CLAIM_PREFIX } = require('../legacy');
const { waitFor, sleep } = require('../harness/wait');

/** The reply code a question's text shows, wherever Twilio's rewriting left it; or null. */
const codeIn = (text) => /\(Start your reply with ([A-Z][0-9]{1,2})\.\)/.exec(text)?.[1] ?? null;

/** Posts of one message before Twilio gives up on it (`#rc=5&rp=all` and more). */
const MAX_POSTS = 8;

/** A next person's text (it quotes the callback's body, its run's tag with it). */
const STEP_TEXT = /has not answered this yet\./;
const TAG_ANYWHERE = /\[x(\d+)-(\d+)\]/;

class People {
  /**
   * `plan`: the trial's plan (its `replies` drawn); `serve`: serve's URL (also its public URL);
   * `ourSender`: the number ringback texts from (people answer what ringback texted them);
   * `runIdKey(run)`: the run's id as ringback keys it; `tagOf(body)`: the run a text is for.
   */
  constructor({ plan, lab, serve, queue, ourSender, runIdKey, runOfText }) {
    Object.assign(this, { plan, lab, serve, ourSender, runIdKey, runOfText });
    this.replies = lab.queue(`${queue}-replies`);
    this.messages = []; // {sid, from, body, run (index) | null, stranger, codeless, forged}
    this.answered = new Set();
    this.seenAt = new Map(); // run index -> when its text to be answered was first seen
    this.tally = { posts: 0, ok: 0, forbidden: 0, gaveUp: 0, late: 0 };
    this.running = false;
    this.n = 0;
  }

  sid() {
    this.n += 1;
    return messageSid(this.n, (this.plan.seed % 0xffff) + 1);
  }

  /** Starts answering, and the strangers and the forger writing. */
  start() {
    this.running = true;
    const r = this.plan.replies;
    const posts = [];
    for (let k = 0; k < r.strangers; k += 1) {
      const m = { sid: this.sid(), from: `+1555098${String((this.plan.seed * 3 + k) % 10000).padStart(4, '0')}`, body: 'who is this?', run: null, stranger: true };
      this.messages.push(m);
      posts.push(this.deliver(m));
    }
    if (r.optOut) {
      // STOP, then (drawn) START once Twilio delivered the STOP, as a person who changed their mind
      const from = `+1555097${String((this.plan.seed * 7) % 10000).padStart(4, '0')}`;
      const stop = { sid: this.sid(), from, body: 'STOP', run: null, optOut: 'STOP' };
      this.messages.push(stop);
      const start = r.optOut.restart ? { sid: this.sid(), from, body: 'START', run: null, optOut: 'START' } : null;
      if (start) this.messages.push(start);
      posts.push(this.deliver(stop).then(() => start && this.deliver(start)));
      this.optOutNumber = from;
    }
    if (r.forged) {
      // a post Twilio did not sign: an answer to a real person's question, with a wrong token
      const to = this.plan.runs.find((run) => r.answers[run.i])?.to || this.plan.runs[0].to;
      const f = { sid: this.sid(), from: to, body: 'yes', run: null, forged: true };
      this.messages.push(f);
      posts.push(this.deliver(f, 'not-the-account-auth-token'));
    }
    this.loop = (async () => {
      while (this.running) {
        await sleep(300);
        await this.answerWhatArrived().catch(() => {});
      }
    })();
    this.pending = posts;
  }

  /**
   * Answers every question ringback texted that nobody answered yet: the recipient's text, or
   * the next person's drawn to answer by text when the recipient is silent (`ladder.silent`).
   */
  async answerWhatArrived() {
    const texts = await fetch(`${this.lab.sim.base}/sim/messages`).then((res) => res.json());
    const r = this.plan.replies;
    for (const t of texts) {
      if (t.from !== this.ourSender) continue;
      const step = STEP_TEXT.test(t.body || '');
      const tag = step ? TAG_ANYWHERE.exec(t.body) : null;
      const run = step ? (tag && Number(tag[1]) === this.plan.seed ? this.plan.runs.find((x) => x.i === Number(tag[2])) : undefined) : this.runOfText(t.body || '');
      const key = step ? `next ${run?.i}` : run?.i;
      if (!run || !r.answers[run.i] || this.answered.has(key)) continue;
      // a silent recipient leaves it to the next people: by text here, or by key on a call
      const silent = run.ladder?.silent;
      if (step ? silent?.by !== 'text' || t.to !== run.ladder.then[silent.upTo] : silent) continue;
      const a = r.answers[run.i];
      if (a.during !== undefined && !(await this.reached(a.during, run))) continue;
      this.answered.add(key);
      const code = codeIn(t.body);
      const codeless = a.codeless || !code;
      const words = run.choices ? 'no' : 'yes, go ahead';
      const m = { sid: this.sid(), from: t.to, body: codeless ? words : `${code} ${words}`, run: run.i, codeless, lateAgain: a.lateAgain };
      this.messages.push(m);
      for (let k = 0; k < a.posts; k += 1) this.pending.push(this.deliver(m));
    }
  }

  /**
   * Whether the person of `run` (another question of theirs) may answer now: once the ladder of
   * run `i` reached them (its text or call to them started) or ended, or 15 s after `run`'s
   * text came.
   */
  async reached(i, run) {
    if (!this.seenAt.has(run.i)) this.seenAt.set(run.i, Date.now());
    if (Date.now() - this.seenAt.get(run.i) > 15_000) return true;
    const ladder = this.plan.runs.find((x) => x.i === i);
    const k = ladder.ladder.then.indexOf(run.to);
    const [state, step] = await this.lab.admin.hmget(`ringback:ladder:{${CLAIM_PREFIX}${this.runIdKey(ladder)}}`, 'state', 'step');
    return (state !== null && state !== 'climbing') || (state === 'climbing' && Number(step) >= (k < 0 ? 0 : 2 + 2 * k));
  }

  /** Posts `m` as Twilio does, signed with `token`, again while no answer (or a 5xx) comes. */
  async deliver(m, token = AUTH_TOKEN) {
    const params = inboundParams({ sid: m.sid, from: m.from, to: this.ourSender, body: m.body, accountSid: ACCOUNT_SID });
    const signature = twilio.getExpectedTwilioSignature(token, `${this.serve}${INBOUND_PATH}`, params);
    for (let attempt = 1; attempt <= MAX_POSTS; attempt += 1) {
      this.tally.posts += 1;
      const status = await fetch(`${this.serve}${INBOUND_PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signature },
        body: new URLSearchParams(params).toString(),
        signal: AbortSignal.timeout(15_000), // Twilio's webhook timeout
      }).then(
        async (res) => {
          await res.text().catch(() => null);
          return res.status;
        },
        () => null,
      );
      if (status === 200) {
        this.tally.ok += 1;
        m.answered200 = true;
        return;
      }
      if (status === 403) {
        this.tally.forbidden += 1;
        m.forbidden = true;
        return;
      }
      if (status !== null && status < 500) {
        m.refused = status;
        return;
      }
      await sleep(250 * Math.min(attempt, 6));
    }
    this.tally.gaveUp += 1;
    m.gaveUp = true;
  }

  /** Stops answering; waits for every post in flight. */
  async stop() {
    this.running = false;
    await this.loop;
    await Promise.all(this.pending);
  }

  /** Twilio posts again, late, the messages drawn for it (after the trial came to rest). */
  async late() {
    const again = this.messages.filter((m) => m.lateAgain && !m.forged);
    this.tally.late = again.length;
    await Promise.all(again.map((m) => this.deliver(m)));
  }

  /**
   * The checks at rest: `check(ok, invariant, detail, run)`; `skip(run)`: runs whose answers
   * are not judged (runs sharing one key).
   */
  async check(check, { label, skip }) {
    const recorded = async (sid) => (await this.lab.admin.exists(`ringback:inbound:${CLAIM_PREFIX}${sid}`)) === 1;
    // a message serve recorded but did not finish is its sweep's (15 s after it arrived)
    const owed = [];
    for (const m of this.messages) if (!m.forged && (m.answered200 || (await recorded(m.sid)))) owed.push(m);
    const jobs = new Map();
    await waitFor(
      async () => {
        for (const m of owed) if (!jobs.has(m.sid)) {
          const job = await this.replies.getJob(m.sid);
          if (job) jobs.set(m.sid, job);
        }
        return owed.every((m) => jobs.has(m.sid));
      },
      45_000,
      'every delivered message on the replies queue',
      500,
    ).catch(() => {});
    if (this.optOutNumber) {
      // recorded while the last keyword Twilio delivered is STOP
      const last = this.messages.filter((m) => m.optOut && owed.includes(m)).pop();
      if (last) {
        const recordedOptOut = (await this.lab.admin.hexists(`ringback:opt-outs:${CLAIM_PREFIX}`, `${this.ourSender}\n${this.optOutNumber}`)) === 1;
        check(recordedOptOut === (last.optOut === 'STOP'), 'an opt-out is kept until START', `after ${last.optOut}: the opt-out is ${recordedOptOut ? '' : 'not '}recorded`);
      }
    }
    const byIndex = new Map(this.plan.runs.map((run) => [run.i, run]));
    for (const m of this.messages) {
      const job = m.forged ? await this.replies.getJob(m.sid) : jobs.get(m.sid);
      if (m.forged) {
        check(!job && m.forbidden, 'a forged post adds nothing', `${m.sid}: ${job ? 'a replies job' : 'no job'}, ${m.forbidden ? '403' : 'not refused'}`);
        continue;
      }
      check(!m.forbidden && !m.refused, "Twilio's genuine posts are taken", `${m.sid}: answered ${m.forbidden ? 403 : m.refused}`);
      if (!owed.includes(m)) continue; // Twilio gave up before serve recorded it: not delivered
      check(Boolean(job), 'every reply reaches the replies queue', `${m.sid} from ${m.from} (${m.stranger ? 'a stranger' : m.optOut ? `${m.optOut} from a stranger` : label(byIndex.get(m.run))}): answered ${m.answered200 ? 200 : 'never'}, no job`);
      if (!job) continue;
      const d = job.data || {};
      if (m.stranger) {
        check(d.runId === null && d.matched === 'unmatched', "a stranger's message answers no run", `${m.sid}: matched ${d.matched}, runId ${d.runId}`);
        continue;
      }
      if (m.optOut) {
        check(d.runId === null && d.matched === 'opt_out' && d.optOutType === m.optOut, 'an opt-out keyword answers no run', `${m.sid} "${m.body}": matched ${d.matched}, runId ${d.runId}, optOutType ${d.optOutType}`);
        continue;
      }
      const run = byIndex.get(m.run);
      if (skip(run)) continue;
      const want = this.runIdKey(run);
      const mine = d.runId === want && (d.matched === 'answer' || d.matched === 'late');
      const askedBack = m.codeless && d.runId === null && d.matched === 'ambiguous';
      check(mine || askedBack, "a reply answers its own run, never another's", `${m.sid} (${m.codeless ? 'codeless' : 'coded'} "${m.body}") for ${label(run)}: matched ${d.matched}, runId ${d.runId}${d.ambiguous ? `, ambiguous between ${JSON.stringify(d.ambiguous)}` : ''}`, label(run));
    }
  }
}

module.exports = { People };
