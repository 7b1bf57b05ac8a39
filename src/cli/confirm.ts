/** Asks a yes/no question on stderr and reads the answer from stdin; anything but y/yes (or no answer) is no. */
import { createInterface } from "node:readline";

export function confirm(question: string): Promise<boolean> {
  return new Promise((resolve) => {
    const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: false });
    let answered = false;
    rl.once("line", (line) => {
      answered = true;
      rl.close();
      resolve(/^\s*y(es)?\s*$/i.test(line));
    });
    rl.once("close", () => {
      if (!answered) resolve(false);
    });
    process.stderr.write(`${question} [y/N] `);
  });
}
