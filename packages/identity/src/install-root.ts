// The installation root (the repository root) for svc-identity and svc-auth-admin, which run as
// esbuild bundles in packages/daemon/dist (packages/daemon/build/build.js) or from these sources.
import { resolve } from 'node:path';

/** Defined by the bundle build (build/build.js): the path from the bundle's directory to the root. */
declare const SVC_INSTALL_ROOT_FROM_MODULE: string | undefined;

/** From a bundle, the path the build defined; from the sources, three levels above packages/identity/src. */
export const INSTALL_ROOT = resolve(
  import.meta.dirname,
  typeof SVC_INSTALL_ROOT_FROM_MODULE === 'string' ? SVC_INSTALL_ROOT_FROM_MODULE : '../../..',
);
