/**
 * "Polling" one model, in Triton's sense: read its folder into what a load needs — the raw config (or the
 * override), the version folders, the ensemble members and a fingerprint — without touching any loaded
 * state. Errors here are repository errors: the model is not loaded and, if it was loaded, keeps serving.
 * They reach clients (load errors, the repository index), so they name files relative to the model folder.
 */
import { realFolder, relativizePaths } from '../../common/confine.js';
import { NereidError, invalidArg } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import type { ModelConfig } from '../../model-config/model-config.js';
import { membersOf, type MemberRef } from './dependencies.js';
import type { FolderView } from '../storage/filesystem.js';
import { configFileOf, versionFoldersOf } from './layout.js';
import type { ModelSource } from './lifecycle.js';
import { msg } from './messages.js';
import type { ConfigTextParser } from './options.js';

export interface PolledModel {
  readonly name: string;
  readonly source: ModelSource;
  /** undefined: the folder has no config file and auto-complete must derive it. */
  readonly raw: ModelConfig | undefined;
  /** Version folders found, ascending. */
  readonly versions: readonly number[];
  readonly members: readonly MemberRef[];
  /** undefined for override copies (they never count as unchanged). */
  readonly fingerprint: string | undefined;
  /** The load carries a config and/or file override. */
  readonly overridden: boolean;
  /** The folder as read (an object store's listing): loads copy exactly these files. */
  readonly view: FolderView;
}

export interface ReadSettings {
  readonly modelConfigName: string;
  readonly maxConfigFileBytes: number;
  readonly parseConfigText: ConfigTextParser;
  readonly log: Logger;
}

/** Triton requires a config's `name`, when given, to equal the folder name; an empty one takes it. */
export function withModelName(config: ModelConfig, name: string): ModelConfig {
  if (config.name === '' || config.name === undefined) return { ...config, name };
  if (config.name !== name) throw invalidArg(msg.nameMismatch(name, config.name));
  return config;
}

export async function readModel(
  name: string,
  source: ModelSource,
  settings: ReadSettings,
  configOverride?: ModelConfig,
): Promise<PolledModel> {
  try {
    const view = await source.fs.openFolder(source.modelDir);
    // Fingerprint first: a change made while we read lands in the next poll, never silently in between.
    const fingerprint = source.override ? undefined : await view.fingerprint();
    let raw: ModelConfig | undefined;
    if (configOverride) {
      raw = configOverride;
    } else {
      const rel = await configFileOf(view, settings.modelConfigName);
      const text = await view.readText(rel, settings.maxConfigFileBytes);
      raw = text === undefined ? undefined : settings.parseConfigText(text, view.locationOf(rel));
    }
    if (raw) raw = withModelName(raw, name);
    const { versions, ignored } = await versionFoldersOf(view);
    for (const dir of ignored) {
      settings.log.warn(
        /^0[0-9]+$/.test(dir)
          ? `ignore version directory '${dir}' which contains leading zeros in its directory name`
          : `ignore version directory '${dir}' which fails to convert to integral number`,
      );
    }
    return {
      name,
      source,
      raw,
      versions,
      members: membersOf(raw),
      fingerprint,
      overridden: configOverride !== undefined || source.override,
      view,
    };
  } catch (err) {
    const e = NereidError.from(err, 'INTERNAL');
    const paths = [source.modelDir, source.repositoryPath];
    paths.push(...(await Promise.all(paths.map((p) => realFolder(p)))));
    const message = relativizePaths(e.message, paths);
    throw message === e.message ? e : new NereidError(e.code, message, { cause: e });
  }
}
