// The installation root (the repository root, /opt/svc in the Debian package): where apps/, config/
// and the web UI files are found. One definition for every program: svcd, svc-agent, svc-identity
// and svc-auth-admin run as esbuild bundles (packages/platform/build/build.js) or from these sources.
import { resolve } from 'node:path';

/** Defined by the bundle build (build/build.js): the path from the bundle's directory to the root. */
declare const SVC_INSTALL_ROOT_FROM_MODULE: string | undefined;

/**
 * From a bundle, the path the build defined; from the sources (tests, tools), four levels above
 * packages/platform/src/config.
 */
export const INSTALL_ROOT = resolve(
  import.meta.dirname,
  typeof SVC_INSTALL_ROOT_FROM_MODULE === 'string' ? SVC_INSTALL_ROOT_FROM_MODULE : '../../../..',
);
