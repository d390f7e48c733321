// Runtimes that import .wasm files (Cloudflare Workers) give a compiled module.
declare module '*.wasm' {
  const module: WebAssembly.Module;
  export default module;
}
