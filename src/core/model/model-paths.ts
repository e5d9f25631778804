/**
 * The files a model's config may name, confined to the model's folder. Config values that become paths
 * (default_model_filename, label_filename, model_warmup input_data_file, and whatever a backend derives,
 * such as a Python model's EXECUTION_ENV_PATH) come from the repository or from a client's load override,
 * so each is checked by common/confine.ts before anything is opened:
 * - as text, after `..` is resolved, the path must stay inside the model folder (`../../etc/shadow` is
 *   refused before the file system is asked anything);
 * - on disk, symbolic links are followed as Triton follows them (deployments link model and version
 *   folders to where the files really are, Kubernetes mounts ConfigMaps through links) as long as they
 *   arrive inside the model folder's real location, a version folder's real location, or the repository
 *   the model was found in; a link that leads anywhere else (`model.onnx -> /etc/shadow`, `data -> /`)
 *   is refused.
 * Messages name paths relative to the model folder, the way the client wrote them, and say "leaves" for a
 * path that leaves whether or not its target exists, so they tell nothing about the world outside.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { confine, realFolder } from '../../common/confine.js';
import { NereidError, invalidArg } from '../../common/errors.js';

export interface ModelFolderLocation {
  readonly modelName: string;
  readonly modelDir: string;
  readonly repositoryPath: string;
}

export interface ResolveOptions {
  /** Refuse a path that does not exist (NOT_FOUND-like INVALID_ARG naming the relative path). */
  readonly mustExist?: boolean;
}

const VERSION_FOLDER = /^(0|[1-9][0-9]*)$/;

export class ModelFolder {
  private constructor(
    readonly location: ModelFolderLocation,
    private readonly modelDir: string,
    private readonly realRoots: readonly string[],
  ) {}

  static async of(location: ModelFolderLocation): Promise<ModelFolder> {
    const modelDir = path.resolve(location.modelDir);
    const roots = [await realFolder(modelDir), await realFolder(location.repositoryPath)];
    return new ModelFolder(location, modelDir, roots);
  }

  /** `p` relative to the model folder, for messages (`.` for the folder itself). */
  relative(p: string): string {
    const rel = path.relative(this.modelDir, path.resolve(p));
    return rel === '' ? '.' : rel;
  }

  /**
   * Joins a config value to a folder inside the model folder (as Triton joins: a leading `/` does not make
   * it absolute) and checks the result. `what` names the value in messages, e.g.
   * `default_model_filename '../x.onnx'`. Returns the absolute path to open.
   */
  async resolveValue(
    base: string,
    value: string,
    what: string,
    options: ResolveOptions = {},
  ): Promise<string> {
    if (value.includes('\0'))
      throw invalidArg(`${what} of model '${this.location.modelName}' contains a NUL character`);
    return this.check(path.join(path.resolve(base), value), what, options);
  }

  /**
   * Checks an absolute path derived from the model's config or folder: it must stay inside the model
   * folder as text and on disk. Returns it (normalised) or throws INVALID_ARG.
   */
  async check(candidate: string, what: string, options: ResolveOptions = {}): Promise<string> {
    const p = path.resolve(candidate);
    const name = this.location.modelName;
    const roots = [...this.realRoots];
    const first = path.relative(this.modelDir, p).split(path.sep)[0];
    if (first !== undefined && VERSION_FOLDER.test(first)) {
      roots.push(await realFolder(path.join(this.modelDir, first)));
    }
    const verdict = await confine(p, [this.modelDir], roots);
    if (verdict === 'escapes') {
      throw invalidArg(`${what} of model '${name}' leaves the model folder; it must name a file inside it`);
    }
    if (verdict === 'leads-outside') {
      throw invalidArg(
        `${what} of model '${name}': '${this.relative(p)}' leads outside the model folder through a symbolic link`,
      );
    }
    const kind = await kindOf(p);
    if (options.mustExist && kind === undefined) {
      throw invalidArg(`${what} of model '${name}': '${this.relative(p)}' not found in the model folder`);
    }
    // A FIFO would block the thread that opens it forever (four of them stop every load, gzip and DNS
    // lookup sharing libuv's pool), a device never ends: only files and folders are ever opened.
    if (kind === 'other') {
      throw invalidArg(`${what} of model '${name}': '${this.relative(p)}' is not a regular file or folder`);
    }
    return p;
  }

  /** True when `candidate` stays inside (as check() decides) and exists; never throws. */
  async has(candidate: string): Promise<boolean> {
    try {
      await this.check(candidate, 'path', { mustExist: true });
      return true;
    } catch (err) {
      if (err instanceof NereidError) return false;
      throw err;
    }
  }
}

/** What `p` is, links followed: undefined when it does not exist (or cannot be looked at). */
async function kindOf(p: string): Promise<'file' | 'dir' | 'other' | undefined> {
  try {
    const info = await stat(p);
    return info.isFile() ? 'file' : info.isDirectory() ? 'dir' : 'other';
  } catch {
    return undefined;
  }
}
