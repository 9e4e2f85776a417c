//! The repository stands on its own: what its documents and comments point at is in it.
//! Links between the documents resolve, and the reference notes the code cites
//! (`docs/reference/<file> §…`) are there (issue 12: "the README and doc comments point only
//! inside the repository").

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every tracked file, as `git ls-files` names them (paths relative to the root).
fn tracked() -> Vec<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root())
        .args(["ls-files", "-z"])
        .output()
        .expect("git ls-files");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("UTF-8 paths")
        .split('\0')
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The text files worth reading for references: documents, code, scripts, manifests.
fn texts() -> Vec<(String, String)> {
    let kinds = [
        ".md",
        ".rs",
        ".toml",
        ".sh",
        ".yaml",
        ".proto",
        ".py",
        "Dockerfile",
    ];
    tracked()
        .into_iter()
        .filter(|p| kinds.iter().any(|k| p.ends_with(k)))
        .filter_map(|p| {
            let text = std::fs::read_to_string(root().join(&p)).ok()?;
            Some((p, text))
        })
        .collect()
}

/// Relative targets of the markdown links (`[text](target)`) in `text`, anchors dropped.
fn relative_links(text: &str) -> Vec<String> {
    let mut links = Vec::new();
    for (i, _) in text.match_indices("](") {
        let rest = &text[i + 2..];
        let Some(end) = rest.find(')') else { continue };
        let target = rest[..end].split('#').next().unwrap_or_default().trim();
        if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        links.push(target.to_owned());
    }
    links
}

#[test]
fn every_link_between_the_documents_resolves_inside_the_repository() {
    let root = root().canonicalize().unwrap();
    let mut checked = 0;
    for (path, text) in texts().iter().filter(|(p, _)| p.ends_with(".md")) {
        let dir = root.join(path).parent().unwrap().to_path_buf();
        for link in relative_links(text) {
            let target = dir.join(&link);
            let resolved = target
                .canonicalize()
                .unwrap_or_else(|_| panic!("{path}: link to {link}, which does not exist"));
            assert!(
                resolved.starts_with(&root),
                "{path}: link to {link} leaves the repository"
            );
            checked += 1;
        }
    }
    assert!(checked > 10, "only {checked} links found");
}

#[test]
fn nothing_points_outside_the_repository_and_every_cited_reference_is_here() {
    // Where the project's shared notes sat beside the repository (spelt in two pieces so
    // that this file does not match itself).
    let outside = concat!("..", "/shared");
    let mut cited = 0;
    for (path, text) in texts() {
        assert!(
            !text.contains(outside),
            "{path} points at {outside}, outside the repository"
        );
        for (i, _) in text.match_indices("docs/reference/") {
            // Part of a URL (kubernetes.io's docs/reference/… in the API documentation the
            // management-cluster emulator serves), not a citation.
            if text[..i].ends_with('/') {
                continue;
            }
            let name: String = text[i + "docs/reference/".len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '.' || *c == '_')
                .collect();
            let name = name.trim_end_matches('.');
            if name.is_empty() {
                continue; // the directory itself
            }
            assert!(
                root().join("docs/reference").join(name).is_file(),
                "{path} cites docs/reference/{name}, which is not in the repository"
            );
            cited += 1;
        }
    }
    assert!(cited > 20, "only {cited} citations found");
}

/// The one arrow the architecture forbids: the gateway reads the coordinator's sagas only as
/// their public view (`hypersaga_saga::StoredOperation`), never as the `Saga` record itself,
/// so the record can change without the gateway (docs/architecture.md).
#[test]
fn the_gateway_reads_sagas_only_through_their_public_view() {
    // `Saga` as a whole word (not `SagaWake`, not `StoredSaga`).
    let names_saga = |line: &str| {
        line.match_indices("Saga").any(|(i, _)| {
            let ident = |c: char| c.is_alphanumeric() || c == '_';
            let before = line[..i].chars().next_back().is_some_and(ident);
            let after = line[i + 4..].chars().next().is_some_and(ident);
            !before && !after
        })
    };
    let offending: Vec<String> = texts()
        .into_iter()
        .filter(|(path, _)| path.starts_with("services/gateway/") && path.ends_with(".rs"))
        .flat_map(|(path, text)| {
            text.lines()
                .enumerate()
                .filter(|(_, line)| names_saga(line))
                .map(|(i, line)| format!("{path}:{}: {}", i + 1, line.trim()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(offending.is_empty(), "{offending:#?}");
}
