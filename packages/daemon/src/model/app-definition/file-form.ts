// The persisted form: work/apps/<name>.yaml (written by svc) and the bundled apps/*.yaml, YAML with
// every secret_env value encrypted. Files of the shape before App Mesh 3.0's names are read through
// the same aliases as API input; the app store rewrites them.
import { SvcError } from '@svc/protocol';
import { parse as parseYaml } from 'yaml';
import { writeYaml } from '../../util/block-yaml.ts';
import type { SecretCrypter } from '../secret-crypter.ts';
import { isEncryptedToken } from '../secret-crypter.ts';
import { invalid } from './issues.ts';
import { parseFrom } from './parse.ts';
import { prepareInput } from './schema.ts';
import type { AppDefinition } from './types.ts';
import { describe, isPlainObject } from './values.ts';
import { plainFields } from './view.ts';

/** YAML of the definition with every secret_env value encrypted. */
export function serializeApp(def: AppDefinition, crypter: SecretCrypter): string {
  const doc = plainFields(def, 'file');
  doc['secret_env'] = Object.fromEntries(
    Object.entries(def.secret_env).map(([key, value]) => [key, crypter.encrypt(value)]),
  );
  return writeYaml(doc); // YAML 1.1 and 1.2 safe (util/block-yaml.ts)
}

export interface DeserializeOptions {
  /** Bundled apps/*.yaml: `system: true` is accepted. */
  trusted?: boolean;
  /** File name for messages. */
  file?: string;
  /** Called with the old field names (LEGACY_FIELDS) the file used; its owner may rewrite it. */
  onLegacy?: (fields: string[]) => void;
}

/**
 * Parse a persisted definition. secret_env values are decrypted (a plaintext value, as an operator
 * may write in a bundled file, is accepted and encrypted on the next save). Files of the shape
 * before App Mesh 3.0's names are read through the same aliases as API input. Throws
 * SvcError('invalid_app', '<file>: <problem>').
 */
export function deserializeApp(
  text: string,
  crypter: SecretCrypter,
  options: DeserializeOptions = {},
): AppDefinition {
  const prefix = `${options.file ?? 'application file'}: `;
  let doc: unknown;
  try {
    doc = parseYaml(text, { maxAliasCount: 100, uniqueKeys: true });
  } catch (error) {
    throw new SvcError(
      'invalid_app',
      `${prefix}not valid YAML: ${(error as Error).message.split('\n')[0] ?? ''}`,
      {
        cause: error,
      },
    );
  }
  if (!isPlainObject(doc))
    throw invalid([`must be a YAML mapping of application fields, got ${describe(doc)}`], prefix);
  for (const field of ['secret_env', 'sec_env']) {
    const secrets = doc[field];
    if (isPlainObject(secrets)) doc[field] = decryptAll(secrets, crypter, `${prefix}${field}`);
  }
  const source = options.trusted === true ? 'bundled' : 'stored';
  let def: AppDefinition;
  try {
    def = parseFrom(doc, source, {});
  } catch (error) {
    if (error instanceof SvcError)
      throw new SvcError('invalid_app', prefix + error.message, { cause: error });
    throw error;
  }
  const { found } = prepareInput(doc, source);
  if (found.length > 0) options.onLegacy?.(found);
  return def;
}

function decryptAll(
  secrets: Record<string, unknown>,
  crypter: SecretCrypter,
  where: string,
): Record<string, unknown> {
  const plain: Record<string, unknown> = {};
  for (const key of Object.keys(secrets)) {
    const value = secrets[key];
    let decrypted: unknown = value;
    if (typeof value === 'string' && isEncryptedToken(value)) {
      try {
        decrypted = crypter.decrypt(value);
      } catch (error) {
        throw new SvcError('invalid_app', `${where}["${key}"]: ${(error as Error).message}`, {
          cause: error,
        });
      }
    }
    Object.defineProperty(plain, key, {
      value: decrypted,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return plain;
}
