import { Worker } from 'node:worker_threads';

// bcrypt costs ~100 ms of CPU per comparison by design. On the event loop, a client looping wrong
// passwords would stall every scrape; here it runs on one worker thread, one comparison at a time (a
// worker handles its messages in order, and the sync calls below never interleave), as the toolkit
// serialises its comparisons behind a mutex.

/** The worker's code: bcryptjs by the path the main thread resolved, so it loads wherever the cwd is. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const bcrypt = require(workerData.bcryptjs);
parentPort.on('message', (m) => {
  let result;
  try {
    result = m.op === 'compare' ? bcrypt.compareSync(m.password, m.hash) : bcrypt.hashSync(m.password, m.cost);
  } catch (e) {
    parentPort.postMessage({ id: m.id, error: String(e && e.message || e) });
    return;
  }
  parentPort.postMessage({ id: m.id, result });
});
`;

type Request = { op: 'compare'; password: string; hash: string } | { op: 'hash'; password: string; cost: number };
type Reply = { id: number; result?: boolean | string; error?: string };

export class BcryptWorker {
  #worker?: Worker;
  #next = 0;
  readonly #pending = new Map<number, { resolve: (v: boolean | string) => void; reject: (e: Error) => void }>();

  /** Comparisons waiting or running (what a flood of wrong passwords piles up). */
  get queued(): number {
    return this.#pending.size;
  }

  compare(password: string, hash: string): Promise<boolean> {
    return this.#call({ op: 'compare', password, hash }) as Promise<boolean>;
  }

  hash(password: string, cost: number): Promise<string> {
    return this.#call({ op: 'hash', password, cost }) as Promise<string>;
  }

  /** Ends the thread; pending calls reject. */
  async close(): Promise<void> {
    const w = this.#worker;
    this.#worker = undefined;
    if (w) await w.terminate();
  }

  #call(req: Request): Promise<boolean | string> {
    const w = this.#worker ?? this.#start();
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      w.postMessage({ id, ...req });
    });
  }

  #start(): Worker {
    const w = new Worker(WORKER_SOURCE, { eval: true, workerData: { bcryptjs: require.resolve('bcryptjs') } });
    // Idle, the thread must not keep the process alive (a shutdown does not wait for it).
    w.unref();
    w.on('message', (m: Reply) => {
      const p = this.#pending.get(m.id);
      if (!p) return;
      this.#pending.delete(m.id);
      if (m.error !== undefined) p.reject(new Error(`bcrypt: ${m.error}`));
      else p.resolve(m.result as boolean | string);
    });
    // A dead thread fails what it held (those requests are refused) and is started again on the next call.
    const fail = (why: string) => {
      if (this.#worker !== w && this.#worker !== undefined) return; // a newer thread holds the pending calls now
      this.#worker = undefined;
      for (const p of this.#pending.values()) p.reject(new Error(`bcrypt worker ${why}`));
      this.#pending.clear();
    };
    w.on('error', (e) => fail(`failed: ${e.message}`));
    w.on('exit', (code) => fail(`exited with code ${code}`));
    this.#worker = w;
    return w;
  }
}
