/**
 * Test support: real POSIX shm objects in /dev/shm with unique names, removed by cleanup(). Creating the
 * file under /dev/shm is what shm_open(O_CREAT) + ftruncate do for a client.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';

export class ShmObjects {
  private readonly names = new Set<string>();
  /** Starts every object name made here. */
  readonly prefix = `nereid-test-${process.pid}-${randomBytes(4).toString('hex')}`;
  private n = 0;

  /** A fresh unused object name (without slash); registered for cleanup. */
  name(label = 'obj'): string {
    const name = `${this.prefix}-${label}-${this.n++}`;
    this.names.add(name);
    return name;
  }

  /** Creates /dev/shm/<name> holding `content` (or `size` zero bytes); returns the name. */
  create(content: Buffer | number, label?: string): string {
    const name = this.name(label);
    writeFileSync(`/dev/shm/${name}`, typeof content === 'number' ? Buffer.alloc(content) : content);
    return name;
  }

  read(name: string): Buffer {
    return readFileSync(`/dev/shm/${name}`);
  }

  write(name: string, content: Buffer): void {
    writeFileSync(`/dev/shm/${name}`, content);
  }

  cleanup(): void {
    for (const name of this.names) rmSync(`/dev/shm/${name}`, { force: true, recursive: true });
    this.names.clear();
  }
}
