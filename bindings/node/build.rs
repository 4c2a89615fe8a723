//! Link flags for a Node-API module (napi-rs): symbols resolved from the loading Node process.

fn main() {
    napi_build::setup();
}
