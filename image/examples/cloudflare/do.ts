// A sketch, NOT RUN HERE: a Durable Object that drives tend inside its
// container with one container.exec(["tend", ...]) per step, replacing the
// shell recipe for background processes (mkdir claim, setsid, kill -0,
// tail -F, a grep poll, exit codes written with mv).
//
// Written against Cloudflare's documented exec API (workerd's
// ContainerExecOptions / ExecProcess / ExecOutput, 2026): exec(cmd, opts)
// starts cmd directly, no shell; opts.env sets the exec's environment;
// process.output() buffers stdout and stderr as ArrayBuffers and gives
// exitCode.  Check the option names against your workers-types version.
import { Container } from "@cloudflare/containers";

// tend's exit codes (README, `tend help`).
const OK = 0, REFUSED = 1, NO_SUCH = 4, TAKEN = 5, ENDED_FIRST = 6, TIMED_OUT = 124;

interface Env { DEPLOY_TOKEN: string }

interface ProcessStatus {
  id: string; pid: number; state: "running" | "exited" | "error";
  exit?: { code: number; signal: number | null; timedOut: boolean };
  error?: { code: string; message: string };
  stdoutBytes: number; stderrBytes: number;
}

interface LogPoll { stdout: string; stderr: string; cursor: string; ended: boolean; skippedBytes?: number }

class TendError extends Error {
  constructor(readonly exitCode: number, readonly body: unknown) { super(JSON.stringify(body)); }
}

export class Sandbox extends Container<Env> {
  // One step: exec tend with --json, parse stdout, keep the exit code.
  private async tend(args: string[], env?: Record<string, string>):
      Promise<{ code: number; out: any }> {
    if (!this.ctx.container!.running) await this.start();
    const proc = await this.ctx.container!.exec(["/usr/local/bin/tend", ...args], { env });
    const res = await proc.output();
    const text = (b: ArrayBuffer) => new TextDecoder().decode(b).trim();
    const out = text(res.stdout);
    if (![OK, ENDED_FIRST, TIMED_OUT].includes(res.exitCode) || out === "") {
      // --json: the agent's error object, {"error","code"}, on stderr.
      const err = text(res.stderr);
      throw new TendError(res.exitCode, err.startsWith("{") ? JSON.parse(err) : err);
    }
    return { code: res.exitCode, out: JSON.parse(out) };
  }

  // Claim and start in one exec.  The secret is set only in this exec's
  // environment; `-e TOKEN` copies it into the process's, never into argv
  // or onto disk.  null: someone else holds the ID (exit 5).
  async startJob(id: string, argv: string[]): Promise<ProcessStatus | null> {
    try {
      const r = await this.tend(
        ["start", "--id", id, "--timeout", "600", "-e", "TOKEN", "--json", "--", ...argv],
        { TOKEN: this.env.DEPLOY_TOKEN });
      return r.out as ProcessStatus;
    } catch (e) {
      if (e instanceof TendError && e.exitCode === TAKEN) return null;
      throw e;
    }
  }

  // Start a server and return once it listens: one exec, no health loop.
  async startServer(id: string, port: number, argv: string[]): Promise<ProcessStatus> {
    const r = await this.tend(["start", "--id", id, "--json", "--ready-port", String(port),
                               "--ready-timeout", "30", "--", ...argv]);
    if (r.code === ENDED_FIRST) throw new Error(`${id} exited before listening`);
    if (r.code === TIMED_OUT) throw new Error(`${id} not listening after 30 s`);
    return r.out as ProcessStatus;
  }

  async status(id: string): Promise<ProcessStatus | null> {
    try {
      return (await this.tend(["status", "--json", id])).out as ProcessStatus;
    } catch (e) {
      if (e instanceof TendError && e.exitCode === NO_SUCH) return null;
      throw e;
    }
  }

  // New output since the cursor the caller kept (in DO storage, say):
  // every byte exactly once across calls, no stream held open.
  async readLogs(id: string): Promise<{ stdout: Uint8Array; stderr: Uint8Array; ended: boolean }> {
    const key = `cursor:${id}`;
    const since = await this.ctx.storage.get<string>(key);
    const args = ["logs", "--json", ...(since ? ["--since", since] : []), id];
    const poll = (await this.tend(args)).out as LogPoll;
    await this.ctx.storage.put(key, poll.cursor);
    const bytes = (b64: string) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    return { stdout: bytes(poll.stdout), stderr: bytes(poll.stderr), ended: poll.ended };
  }

  // Wait in bounded steps, each shorter than the platform's exec timeout.
  async waitJob(id: string): Promise<ProcessStatus> {
    for (;;) {
      const r = await this.tend(["wait", "--json", "--timeout", "20", id]);
      if (r.code !== TIMED_OUT) return r.out as ProcessStatus;   // exit 0: ended
    }
  }

  // kill and rm print nothing: the exit code is the answer.
  private async quiet(args: string[]): Promise<number> {
    const proc = await this.ctx.container!.exec(["/usr/local/bin/tend", ...args, "--json"]);
    return (await proc.output()).exitCode;
  }

  async stopJob(id: string): Promise<void> {
    const code = await this.quiet(["kill", id]);
    if (code !== OK && code !== REFUSED) throw new Error(`tend kill ${id}: exit ${code}`);
    await this.waitJob(id);                      // 143 in exit.code after TERM
    await this.quiet(["rm", id]);
    await this.ctx.storage.delete(`cursor:${id}`);
  }
}
