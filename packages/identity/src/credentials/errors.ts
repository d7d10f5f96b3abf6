// The one error type of the credential files. Its message names the file, the line (when one is
// at fault) and the rule that was broken, never the content of a secret.

export class CredentialError extends Error {
  /** The file at fault (absolute or as given). */
  readonly file: string;
  /** 1-based line number, when one line is at fault. */
  readonly line: number | undefined;
  /** The rule, in words (no secret content). */
  readonly rule: string;

  constructor(file: string, rule: string, line?: number) {
    super(line === undefined ? `${file}: ${rule}` : `${file}:${line}: ${rule}`);
    this.name = 'CredentialError';
    this.file = file;
    this.line = line;
    this.rule = rule;
  }
}
