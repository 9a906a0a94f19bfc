// The platform's name as napi-rs names them (`linux-x64-gnu`, `linux-arm64-musl`,
// `darwin-arm64`...): the suffix of the addon's file and of its prebuilt package.

export function platform() {
  const { platform: os, arch } = process;
  if (os !== "linux") return `${os}-${arch}`;
  const glibc = process.report?.getReport?.()?.header?.glibcVersionRuntime;
  return `${os}-${arch}-${glibc ? "gnu" : "musl"}`;
}
