// Side-effect imports of stylesheets: esbuild bundles them into assets/main-<hash>.css.
declare module '*.css';
