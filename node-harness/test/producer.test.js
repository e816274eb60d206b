// bin/producer.js adds jobs the subject then processes (the CLI used by drills and benchmarks).
'use strict';

const assert = require('node:assert/strict');
const { execFile } = require('node:child_process');
const path = require('node:path');
const { promisify } = require('node:util');
const { describe, it, before, after } = require('node:test');
const { startRedis } = require('../lib/harness/redis');
const { scenarioTest, VERSIONS } = require('../lib/harness/scenario');

const run = promisify(execFile);
const PRODUCER = path.join(__dirname, '..', 'bin', 'producer.js');

let redis;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis?.stop();
});

for (const version of VERSIONS) {
  describe(`producer CLI [bullmq v${version}]`, () => {
    it(
      'adds N jobs with data and options in bulk; the subject completes them',
      { timeout: 30_000 },
      scenarioTest(() => redis, version, 'producer', async (s) => {
        const { stdout } = await run(process.execPath, [
          PRODUCER,
          '--url', redis.url,
          '--version', version,
          '-q', s.queueName,
          '-n', '45',
          '--bulk', '20',
          '--name', 'drill',
          '-d', '{"script":["complete:{\\"v\\":1}"]}',
          '-o', '{"attempts":3,"backoff":{"type":"fixed","delay":10}}',
        ]);
        const report = JSON.parse(stdout.trim());
        assert.equal(report.added, 45);
        assert.equal(report.queue, s.queueName);
        assert.equal((await s.counts()).waiting, 45);
        const first = await s.getJob(report.firstId);
        assert.equal(first.name, 'drill');
        assert.deepEqual(first.opts.backoff, { type: 'fixed', delay: 10 });
        assert.equal(first.opts.attempts, 3);

        await s.startSubject({ concurrency: 4 });
        await s.events.wait('completed', undefined, 15_000, 45);
        assert.ok(s.events.of(undefined, 'completed').every((e) => e.data.returnvalue.v === 1));
        assert.equal((await s.counts()).completed, 45);
      }),
    );
  });
}
