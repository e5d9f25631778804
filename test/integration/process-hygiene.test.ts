// Signals reach the server however it was started: `npm start` (npm → sh -c → bash scripts/start.sh →
// exec bin/nereid.js) sent SIGTERM to npm's pid only stops the server and its Python stub processes; a
// Ctrl-C (SIGINT to the whole group) stops them all with exit 0 and no traceback from a stub; and a
// server under a `sh -c` that dies without passing the signal on (what npm exec / npx does with dash) stops
// because the process that started it went away. The processes are found by process group in /proc, so
// the test sees every descendant, whatever its parent became.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ROOT, waitFor } from './harness.js';

interface Proc {
  readonly pid: number;
  readonly cmd: string;
}

/** Live (not zombie) processes whose process group is `pgid`. */
function group(pgid: number): Proc[] {
  const out: Proc[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // pid (comm) state ppid pgrp ...: comm may hold spaces, so read after its closing parenthesis.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) !== pgid || fields[0] === 'Z') continue;
      const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' ').trim();
      out.push({ pid: Number(name), cmd });
    } catch {
      // the process ended while we looked
    }
  }
  return out;
}

function start(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): { child: ChildProcess; log: () => string; closed: Promise<void> } {
  // detached: the child leads a new process group, so the test can find (and clean up) all of it.
  const child = spawn(command, args, { cwd: ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env });
  let log = '';
  child.stdout.on('data', (d: Buffer) => (log += d.toString()));
  child.stderr.on('data', (d: Buffer) => (log += d.toString()));
  // 'close' comes once every process holding the pipes has ended and all they wrote was read.
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  return { child, log: () => log, closed };
}

const SERVER_ARGS = [
  '--model-control-mode=explicit',
  '--load-model=add_sub_python',
  '--http-port=0',
  '--grpc-port=0',
  '--metrics-port=0',
  '--exit-delay-secs=0',
];

async function expectAllGone(pgid: number, log: () => string): Promise<void> {
  try {
    await waitFor(() => group(pgid).length === 0, 120_000);
  } catch {
    const left = group(pgid);
    for (const p of left) {
      try {
        process.kill(p.pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
    assert.fail(`still running: ${left.map((p) => `${p.pid} ${p.cmd}`).join('; ')}\n${log()}`);
  }
}

describe('process hygiene', () => {
  it(
    'SIGTERM to npm start’s own pid stops the server and its Python stubs',
    { timeout: 600_000 },
    async () => {
      const npm = start('npm', ['start', '--', ...SERVER_ARGS], {
        ...process.env,
        NEREID_START_SKIP_BUILD: '1',
      });
      const pgid = npm.child.pid!;
      try {
        // Once fully started (the last frontend up); a signal during the start is handled too (main.ts),
        // but this test is about the signal's path, not about that window.
        await waitFor(() => npm.log().includes('Started Metrics Service'), 300_000);
        const procs = group(pgid);
        const server = procs.filter((p) => p.cmd.includes('bin/nereid.js'));
        const stubs = procs.filter((p) => p.cmd.includes('nereid_python_stub.py'));
        assert.equal(server.length, 1, procs.map((p) => p.cmd).join('\n'));
        assert.ok(stubs.length >= 1, `a Python stub runs: ${procs.map((p) => p.cmd).join('\n')}`);
        process.kill(pgid, 'SIGTERM'); // npm's pid, not its group
        await expectAllGone(pgid, npm.log);
        assert.match(npm.log(), /Received SIGTERM, stopping/);
      } finally {
        try {
          process.kill(-pgid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    },
  );

  it(
    'Ctrl-C (SIGINT to npm start’s process group) stops everything with exit 0 and no Python traceback',
    { timeout: 600_000 },
    async () => {
      const npm = start('npm', ['start', '--', ...SERVER_ARGS], {
        ...process.env,
        NEREID_START_SKIP_BUILD: '1',
      });
      const pgid = npm.child.pid!;
      const exited = new Promise<number | null>((resolve) => npm.child.once('exit', (code) => resolve(code)));
      try {
        await waitFor(() => npm.log().includes('Started Metrics Service'), 300_000);
        assert.ok(group(pgid).some((p) => p.cmd.includes('nereid_python_stub.py')));
        // What a terminal does on Ctrl-C: the whole group, npm, the server and its stubs, gets SIGINT; npm
        // passes it on to the server once more.
        process.kill(-pgid, 'SIGINT');
        assert.equal(await exited, 0, npm.log());
        await npm.closed;
        await expectAllGone(pgid, npm.log);
        assert.match(npm.log(), /Received SIGINT, stopping/);
        assert.match(npm.log(), /Server stopped/);
        assert.doesNotMatch(npm.log(), /Traceback|KeyboardInterrupt/);
      } finally {
        try {
          process.kill(-pgid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    },
  );

  // The two other ways of starting it: Ctrl-C in a terminal (SIGINT to the whole foreground group) exits 0
  // with no Python traceback either way.
  for (const [how, command, args] of [
    ['npx', 'npx', ['--offline', 'nereid', '--model-repository=examples/model_repository', ...SERVER_ARGS]],
    [
      'the bin',
      path.join(ROOT, 'bin/nereid.js'),
      ['--model-repository=examples/model_repository', ...SERVER_ARGS],
    ],
  ] as const) {
    it(
      `Ctrl-C under ${how} stops everything with exit 0 and no Python traceback`,
      { timeout: 600_000 },
      async () => {
        const run = start(command, [...args], { ...process.env });
        const pgid = run.child.pid!;
        const exited = new Promise<number | null>((resolve) =>
          run.child.once('exit', (code) => resolve(code)),
        );
        try {
          await waitFor(() => run.log().includes('Started Metrics Service'), 300_000);
          assert.ok(group(pgid).some((p) => p.cmd.includes('nereid_python_stub.py')));
          process.kill(-pgid, 'SIGINT');
          assert.equal(await exited, 0, run.log());
          await run.closed;
          await expectAllGone(pgid, run.log);
          assert.match(run.log(), /Received SIGINT, stopping/);
          assert.match(run.log(), /Server stopped/);
          assert.doesNotMatch(run.log(), /Traceback|KeyboardInterrupt/);
        } finally {
          try {
            process.kill(-pgid, 'SIGKILL');
          } catch {
            // already gone
          }
        }
      },
    );
  }

  it(
    'a server whose `sh -c` parent dies without passing SIGTERM on stops by itself (npm exec / npx)',
    { timeout: 300_000 },
    async () => {
      // `; true` keeps dash from exec'ing the server, as npm exec's `sh -c` does; npm_command marks an npm
      // launch, as npm sets it.
      const bin = path.join(ROOT, 'bin/nereid.js');
      const sh = start(
        'sh',
        ['-c', `${bin} --model-repository=examples/model_repository ${SERVER_ARGS.join(' ')}; true`],
        {
          ...process.env,
          npm_command: 'exec',
        },
      );
      const pgid = sh.child.pid!;
      try {
        await waitFor(() => sh.log().includes('Started Metrics Service'), 240_000);
        assert.ok(group(pgid).some((p) => p.cmd.includes('nereid_python_stub.py')));
        process.kill(pgid, 'SIGTERM'); // the shell only: it exits and the server is orphaned
        await expectAllGone(pgid, sh.log);
        assert.match(sh.log(), /The process that started the server \(pid \d+\) exited, stopping/);
      } finally {
        try {
          process.kill(-pgid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    },
  );
});
