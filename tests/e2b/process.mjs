// The process half: commands and pty through the SDK's public API.
import assert from 'node:assert/strict'
import { CommandExitError } from 'e2b'
import { Skip } from './check.mjs'

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

// Until fn() is true, or fail after ms.
async function until(fn, ms, what) {
  const end = Date.now() + ms
  for (;;) {
    const v = await fn()
    if (v) return v
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await sleep(50)
  }
}

// The exit code of a command that is expected to fail, or 0.
async function exitCodeOf(sbx, cmd) {
  try {
    await sbx.commands.run(cmd)
    return 0
  } catch (err) {
    if (err instanceof CommandExitError) return err.exitCode
    throw err
  }
}

// Does the shim pass Authorization: Basic (the envd user) through?  A
// Start as a user that does not exist is refused (unauthenticated) if it
// does; without it the agent never sees the user.
async function basicPassed() {
  const msg = Buffer.from(JSON.stringify({ process: { cmd: 'true' } }))
  const head = Buffer.from([0, 0, 0, 0, msg.length])
  const r = await fetch(`${process.env.E2B_SANDBOX_URL}/process.Process/Start`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/connect+json',
      Authorization: 'Basic ' + Buffer.from('no-such-user-e2b:').toString('base64'),
    },
    body: Buffer.concat([head, msg]),
  })
  return (await r.text()).includes('unauthenticated')
}

// Is pid gone (no such process, not even a zombie)?
async function gone(sbx, pid) {
  return (await exitCodeOf(sbx, `kill -0 ${pid} 2>/dev/null`)) !== 0
}

export const checks = [
  {
    name: 'isRunning',
    fn: async (sbx) => assert.equal(await sbx.isRunning(), true),
  },
  {
    name: 'commands.run echo',
    fn: async (sbx) => {
      const r = await sbx.commands.run('echo hello; echo oops >&2')
      assert.equal(r.exitCode, 0)
      assert.equal(r.stdout, 'hello\n')
      assert.equal(r.stderr, 'oops\n')
    },
  },
  {
    name: 'commands.run non-zero exit -> CommandExitError',
    fn: async (sbx) => {
      await assert.rejects(sbx.commands.run('echo partial; exit 3'), (err) => {
        assert.ok(err instanceof CommandExitError, String(err))
        assert.equal(err.exitCode, 3)
        assert.equal(err.stdout, 'partial\n')
        assert.equal(err.error, 'exit status 3')
        return true
      })
    },
  },
  {
    name: 'commands.run envs, cwd',
    fn: async (sbx) => {
      const r = await sbx.commands.run('echo "$FOO:$USER:$HOME"; pwd', {
        envs: { FOO: 'bar', HOME: '/x' },
        cwd: '/tmp',
      })
      assert.equal(r.stdout, 'bar:root:/x\n/tmp\n')
      const dflt = await sbx.commands.run('pwd; echo $HOME')
      assert.equal(dflt.stdout, '/root\n/root\n')
    },
  },
  {
    name: 'commands.run user',
    fn: async (sbx) => {
      if (!(await basicPassed()))
        throw new Skip('the shim drops Authorization: Basic (its pass-through is not in this build)')
      const r = await sbx.commands.run('echo "$USER:$LOGNAME"; pwd; id -un', {
        user: 'nobody',
        cwd: '/tmp',
      })
      assert.equal(r.stdout, 'nobody:nobody\n/tmp\nnobody\n')
    },
  },
  {
    name: 'commands.run background + list + connect + wait',
    fn: async (sbx) => {
      const h = await sbx.commands.run('sleep 1; echo done; exit 4', { background: true })
      const list = await sbx.commands.list()
      const mine = list.find((p) => p.pid === h.pid)
      assert.ok(mine, `pid ${h.pid} not in ${JSON.stringify(list)}`)
      assert.equal(mine.cmd, '/bin/bash')
      assert.deepEqual(mine.args, ['-l', '-c', 'sleep 1; echo done; exit 4'])
      assert.ok(mine.tag, 'a tag (the tend ID)')
      const c = await sbx.commands.connect(h.pid)
      assert.equal(c.pid, h.pid)
      await assert.rejects(c.wait(), (err) => {
        assert.equal(err.exitCode, 4)
        assert.equal(err.stdout, 'done\n')
        return true
      })
      await assert.rejects(h.wait(), (err) => err.exitCode === 4)
    },
  },
  {
    name: 'sendStdin + closeStdin through cat',
    fn: async (sbx) => {
      const h = await sbx.commands.run('cat', { background: true, stdin: true })
      await h.sendStdin('abc\n')
      await sbx.commands.sendStdin(h.pid, new TextEncoder().encode('def\n'))
      await h.closeStdin()
      const r = await h.wait()
      assert.equal(r.stdout, 'abc\ndef\n')
    },
  },
  {
    name: 'kill: exit -1 and the children gone',
    fn: async (sbx) => {
      let out = ''
      const h = await sbx.commands.run('sleep 1000 & echo $!; wait', {
        background: true,
        onStdout: (d) => { out += d },
      })
      const child = await until(() => out.match(/^(\d+)\n/)?.[1], 5000, 'the child pid')
      assert.equal(await gone(sbx, child), false)
      assert.equal(await h.kill(), true)
      await assert.rejects(h.wait(), (err) => {
        assert.equal(err.exitCode, -1)
        assert.equal(err.error, 'signal: killed')
        return true
      })
      await until(() => gone(sbx, child), 5000, `child ${child} to be gone`)
      assert.equal(await sbx.commands.kill(h.pid), false)
    },
  },
  {
    name: 'a sleep that outlives timeoutMs is killed',
    fn: async (sbx) => {
      let out = ''
      const t0 = Date.now()
      await assert.rejects(sbx.commands.run('echo $$; exec sleep 30', {
        timeoutMs: 1500,
        onStdout: (d) => { out += d },
      }))
      assert.ok(Date.now() - t0 < 10000, 'the call ended near its timeout')
      const pid = Number(out.trim())
      assert.ok(pid > 0, `pid from ${JSON.stringify(out)}`)
      await until(async () => !(await sbx.commands.list()).some((p) => p.pid === pid),
        5000, 'the command to leave the list')
      assert.equal(await gone(sbx, pid), true)
    },
  },
  {
    name: 'pty.create + sendInput + resize + kill',
    fn: async (sbx) => {
      let out = ''
      const dec = new TextDecoder()
      const h = await sbx.pty.create({
        cols: 80, rows: 24, timeoutMs: 0,
        onData: (d) => { out += dec.decode(d, { stream: true }) },
      })
      await sbx.pty.sendInput(h.pid, new TextEncoder().encode('stty size\n'))
      await until(() => out.includes('24 80'), 10000, '"24 80" from stty size')
      await sbx.pty.resize(h.pid, { cols: 100, rows: 30 })
      await sbx.pty.sendInput(h.pid, new TextEncoder().encode('stty size\n'))
      await until(() => out.includes('30 100'), 10000, '"30 100" after resize')
      const list = await sbx.commands.list()
      assert.ok(list.some((p) => p.pid === h.pid), 'the pty is listed')
      assert.equal(await sbx.pty.kill(h.pid), true)
      const r = await h.wait().catch((err) => err)
      assert.equal(r.exitCode, -1)
    },
  },
]
