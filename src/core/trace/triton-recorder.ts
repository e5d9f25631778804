/**
 * Triton mode: records a sampled exchange as the objects Triton's trace file holds, in the order Triton
 * writes them. Each trace id has its own list (the frontend's timestamps go to the root's); REQUEST_START
 * brings the `{"id","model_name","model_version"[,"request_id"][,"parent_id"]}` object before its
 * timestamp; at level TENSORS each tensor is an `activity` object. When finished, the lists are joined
 * newest id first (the order Triton's unordered_map yields them: children before their parent).
 */
import type { Tensor } from '../../common/tensor.js';
import type { TraceLevel, TraceSetting } from './setting.js';
import type { TraceNodeInfo, TraceRecorder } from './sampled-trace.js';
import { tensorText } from './tensor-text.js';
import type { TensorActivity, TraceActivity } from './types.js';

export class TritonRecorder implements TraceRecorder {
  private readonly streams = new Map<number, string[]>();

  constructor(
    private readonly setting: TraceSetting,
    private readonly level: TraceLevel,
    private readonly rootId: () => number,
  ) {}

  get traceId(): string {
    return String(this.rootId());
  }

  get wantsTensors(): boolean {
    return this.level.tensors;
  }

  private push(id: number, text: string): void {
    const s = this.streams.get(id);
    if (s) s.push(text);
    else this.streams.set(id, [text]);
  }

  private timestamp(id: number, name: string, ns: bigint): void {
    this.push(id, `{"id":${id},"timestamps":[{"name":${JSON.stringify(name)},"ns":${ns}}]}`);
  }

  capture(root: TraceNodeInfo, name: string, ns: bigint): void {
    if (this.level.timestamps) this.timestamp(root.id, name, ns);
  }

  activity(node: TraceNodeInfo, activity: TraceActivity, ns: bigint): void {
    if (!this.level.timestamps) return;
    if (activity === 'REQUEST_START') {
      let header = `{"id":${node.id},"model_name":${JSON.stringify(node.modelName)},"model_version":${node.modelVersion}`;
      if (node.requestId !== '') header += `,"request_id":${JSON.stringify(node.requestId)}`;
      if (node.parentId !== 0) header += `,"parent_id":${node.parentId}`;
      this.push(node.id, header + '}');
    }
    this.timestamp(node.id, activity, ns);
  }

  tensor(node: TraceNodeInfo, activity: TensorActivity, t: Tensor): void {
    if (!this.level.tensors) return;
    const tensor =
      `{"name":${JSON.stringify(t.name)},"data":"${tensorText(t)}",` +
      `"shape":"${t.shape.join(',')}","dtype":"${t.datatype}"}`;
    this.push(node.id, `{"id":${node.id},"activity":"${activity}","tensor":${tensor}}`);
  }

  context(): string | undefined {
    return undefined;
  }

  finish(): void {
    const ids = [...this.streams.keys()].reverse();
    this.setting.traceFinished(ids.map((id) => this.streams.get(id)!.join(',')).join(','));
  }
}
