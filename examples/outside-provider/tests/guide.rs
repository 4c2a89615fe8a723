//! docs/extending.md quotes this crate in its worked example: each excerpt
//! must be the code as it is, or the guide teaches something that was changed.

use std::path::Path;

/// The lines of `text` without their indentation, blank lines dropped.
fn lines(text: &str) -> Vec<&str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect()
}

/// The `rs` blocks (excerpts, not compiled on their own) of the guide's worked example (section 9).
fn excerpts(guide: &str) -> Vec<String> {
    let example = guide
        .split_once("## 9. The worked example")
        .expect("the guide has its worked example")
        .1;
    example
        .split("```rs\n")
        .skip(1)
        .map(|block| {
            block
                .split_once("```")
                .expect("a closed block")
                .0
                .to_owned()
        })
        .collect()
}

#[test]
fn the_guide_quotes_the_code_as_it_is() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |p: &str| std::fs::read_to_string(root.join(p)).expect(p);
    let guide = read("../../docs/extending.md");
    let sources = [read("src/provider.rs"), read("src/store.rs")];
    let quoted = excerpts(&guide);
    assert_eq!(quoted.len(), 4, "the excerpts this test knows of");
    for excerpt in &quoted {
        let want = lines(excerpt);
        let found = sources
            .iter()
            .any(|source| lines(source).windows(want.len()).any(|w| w == want));
        assert!(
            found,
            "docs/extending.md quotes code that is not in src/:\n{excerpt}"
        );
    }
}
