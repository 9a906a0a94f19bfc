//! Links the addon the way Node loads it: Node-API's symbols come from the node process that
//! loads the module (napi's `dyn-symbols` resolves them at load time), so a plain `cargo
//! build` of the workspace builds it without node to link against.

fn main() {
    napi_build::setup();
}
