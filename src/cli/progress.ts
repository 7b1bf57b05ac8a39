/** A counter on stderr while a long step runs, only when stderr is a terminal (never in logs or pipes). */
export interface Progress {
  tick(): void;
  done(): void;
}

export function progress(label: string, total: number, stream: NodeJS.WriteStream = process.stderr): Progress {
  if (!stream.isTTY) return { tick() {}, done() {} };
  let n = 0;
  let shown = 0;
  const show = () => stream.write(`\r${label} ${n}/${total}`);
  return {
    tick() {
      n++;
      // At most ten redraws a second: a terminal is slower than a fast loop.
      if (Date.now() - shown >= 100) {
        shown = Date.now();
        show();
      }
    },
    done() {
      show();
      stream.write("\n");
    },
  };
}

/** Shows `label` while `work` runs (a query of unknown length), when stderr is a terminal. */
export async function step<T>(label: string, work: () => Promise<T>, stream: NodeJS.WriteStream = process.stderr): Promise<T> {
  if (!stream.isTTY) return work();
  stream.write(`${label}...`);
  try {
    return await work();
  } finally {
    stream.write(" done\n");
  }
}
