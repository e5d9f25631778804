/**
 * The free sequence slots of a sequence-batched model. Every instance has the same number of slots
 * (max_batch_size for the direct strategy, max_candidate_sequences for oldest); a new sequence takes the
 * free slot with the lowest index, as Triton's priority queue does, so sequences spread over the instances
 * (slot 0 of each) before any instance gets a second one, and direct batches stay narrow.
 */

export interface SlotRef {
  readonly instance: number;
  readonly slot: number;
}

/** Lower slot first; between equal slots, the lower instance. */
function before(a: SlotRef, b: SlotRef): boolean {
  return a.slot !== b.slot ? a.slot < b.slot : a.instance < b.instance;
}

/** A binary min-heap of free slots. */
export class FreeSlots {
  private readonly heap: SlotRef[] = [];

  constructor(instances: number, slotsPerInstance: number) {
    for (let slot = 0; slot < slotsPerInstance; slot++) {
      for (let instance = 0; instance < instances; instance++) this.heap.push({ instance, slot });
    }
    // Filled in heap order already: ascending (slot, instance).
  }

  get size(): number {
    return this.heap.length;
  }

  /** Takes the best free slot, or undefined when every slot is bound to a sequence. */
  acquire(): SlotRef | undefined {
    const heap = this.heap;
    if (heap.length === 0) return undefined;
    const top = heap[0];
    const last = heap.pop()!;
    if (heap.length > 0) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < heap.length && before(heap[l], heap[m])) m = l;
        if (r < heap.length && before(heap[r], heap[m])) m = r;
        if (m === i) break;
        [heap[i], heap[m]] = [heap[m], heap[i]];
        i = m;
      }
    }
    return top;
  }

  release(ref: SlotRef): void {
    const heap = this.heap;
    heap.push(ref);
    let i = heap.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!before(heap[i], heap[p])) break;
      [heap[i], heap[p]] = [heap[p], heap[i]];
      i = p;
    }
  }
}
