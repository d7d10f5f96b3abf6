// Credential files, bootstrap and password rules of the built-in identity (issue 4).
export { CredentialError } from './errors.ts';
export {
  MAX_SECRET_FILE_BYTES,
  checkSecretFile,
  checkSecretStats,
  readSecretFile,
  secretFileExists,
} from './secret-files.ts';
export {
  BCRYPT_COST,
  BCRYPT_HASH_PATTERN,
  GENERATED_PASSWORD_BYTES,
  MAX_PASSWORD_BYTES,
  generatePassword,
  hashPassword,
  hashProblem,
  isValidPasswordHash,
  passwordProblem,
  newPasswordProblem,
  MIN_NEW_PASSWORD_LENGTH,
  verifyPassword,
} from './password.ts';
export {
  CREDENTIAL_FILE_NAMES,
  SECRET_FILE_NAMES,
  credentialFilePath,
  formatCredentialFile,
  newCredential,
  parseCredentialFile,
  readCredentialFile,
  secretsDir,
  writeCredentialFile,
  type Credential,
} from './credential-file.ts';
export {
  AUTOMATION_SECRET_BYTES,
  automationSecretPath,
  bootstrapCredentials,
  loadCredentials,
  readAdminPasswordFile,
  readAutomationSecret,
  type AuthMode,
  type BootstrapOptions,
  type BootstrapResult,
  type LoadedCredentials,
} from './bootstrap.ts';
export {
  createSecretBox,
  isEncryptedToken,
  loadMasterKey,
  masterKeyPath,
  TOKEN_PREFIX,
  type SecretBox,
} from './master-key.ts';
export {
  readRelayKey,
  relayKeyMatches,
  relayKeyPath,
  writeRelayKey,
} from './relay-key.ts';
