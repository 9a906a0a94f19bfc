//! Packs the demo's sample repository (`fixtures/sample-repo`) into a tar that the binary
//! embeds, so `burrow demo` runs anywhere.

use std::path::PathBuf;

fn main() {
    let manifest =
        PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let fixture = manifest.join("../fixtures/sample-repo");
    println!("cargo:rerun-if-changed={}", fixture.display());
    let tar = std::fs::File::create(out.join("sample-repo.tar")).expect("create sample-repo.tar");
    let mut b = tar::Builder::new(tar);
    b.follow_symlinks(false);
    b.append_dir_all(".", &fixture)
        .expect("pack fixtures/sample-repo");
    b.finish().expect("finish sample-repo.tar");
}
