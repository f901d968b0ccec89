//! The import rules of ARCHITECTURE.md, read from `src/`: no file-level import circles, and each
//! top-level module imports only the ones below it in [`LAYERS`].
//!
//! A file depends on another when it names it by path (`crate::a::b`, `super::x`, `self::y`, or a
//! child module `m::` it declares). Re-exports (`pub use`) and `mod` declarations are facades,
//! not dependencies, and unit tests (`#[cfg(test)] mod tests` at the end of a file) are left out.

use regex::Regex;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Lowest first. A module may import those before it, never those after it.
const LAYERS: &[&[&str]] = &[
    &["trigger", "http", "sandbox"],
    &["outbound"],
    &["config", "actions", "git"],
    &["plan"],
    &["history"],
    &["forge"],
    &["llm"],
    &["report"],
    &["tools"],
    &["engine"],
    &["app"],
    &["cli"],
];

type Module = Vec<String>;

struct Tree {
    /// Relative path (`app/run.rs`) → source without comments, unit tests and re-exports.
    files: BTreeMap<String, String>,
    /// Module path → relative file path.
    modules: BTreeMap<Module, String>,
    /// Relative file path → the child modules it declares.
    children: BTreeMap<String, Vec<String>>,
}

fn module_of(rel: &str) -> Module {
    let mut parts: Module = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_owned)
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn read_tree() -> Tree {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    let line_comment = Regex::new(r"//[^\n]*").unwrap();
    let unit_tests = Regex::new(r"(?s)#\[cfg\(test\)\]\s*mod tests\s*\{.*").unwrap();
    let reexport = Regex::new(r"(?m)^\s*pub(\([^)]*\))?\s+use\s[^;]*;").unwrap();
    let declaration = Regex::new(r"(?m)^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;").unwrap();
    let mut tree = Tree {
        files: BTreeMap::new(),
        modules: BTreeMap::new(),
        children: BTreeMap::new(),
    };
    for path in paths {
        let rel = path
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if rel == "main.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let children = declaration
            .captures_iter(&text)
            .map(|c| c[1].to_owned())
            .filter(|name| name != "tests")
            .collect();
        let text = line_comment.replace_all(&text, "");
        let text = unit_tests.replace_all(&text, "");
        let text = reexport.replace_all(&text, "");
        let text = declaration.replace_all(&text, "");
        tree.modules.insert(module_of(&rel), rel.clone());
        tree.children.insert(rel.clone(), children);
        tree.files.insert(rel, text.into_owned());
    }
    tree
}

impl Tree {
    /// The deepest file a path names (`crate::forge::github::GitHubClient` → `forge/github/mod.rs`).
    fn resolve(&self, path: &[String]) -> Option<&String> {
        (1..=path.len())
            .rev()
            .find_map(|n| self.modules.get(&path[..n]))
    }

    fn dependencies(&self) -> BTreeMap<String, BTreeSet<String>> {
        let paths = Regex::new(r"\b(crate|super|self)((?:::\w+)*)(?:::\{([^;]*?)\})?").unwrap();
        let mut edges = BTreeMap::new();
        for (rel, text) in &self.files {
            let me = module_of(rel);
            let mut out = BTreeSet::new();
            for capture in paths.captures_iter(text) {
                let rest = capture.get(2).map_or("", |m| m.as_str());
                let group = capture.get(3).map(|m| m.as_str());
                if rest.is_empty() && group.is_none() {
                    continue; // `pub(crate)`, `pub(super)`, a bare `self`
                }
                let mut segments: Module = rest
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect();
                let mut base = match &capture[1] {
                    "crate" => Vec::new(),
                    "self" => me.clone(),
                    _ => me[..me.len().saturating_sub(1)].to_vec(),
                };
                while segments.first().is_some_and(|s| s == "super") {
                    base.pop();
                    segments.remove(0);
                }
                base.extend(segments);
                let targets: Vec<Module> = match group {
                    None => vec![base],
                    Some(items) => items
                        .split(',')
                        .filter_map(|item| {
                            let words: Vec<String> = item
                                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                                .filter(|w| !w.is_empty() && *w != "self" && *w != "as")
                                .take(2)
                                .map(str::to_owned)
                                .collect();
                            (!words.is_empty()).then(|| [base.clone(), words].concat())
                        })
                        .collect(),
                };
                for target in targets {
                    if let Some(file) = self.resolve(&target).filter(|f| *f != rel) {
                        out.insert(file.clone());
                    }
                }
            }
            for child in &self.children[rel] {
                let used = Regex::new(&format!(r"(?:^|[^:\w]){child}::")).unwrap();
                if used.is_match(text)
                    && let Some(file) = self.resolve(&[me.clone(), vec![child.clone()]].concat())
                {
                    out.insert(file.clone());
                }
            }
            edges.insert(rel.clone(), out);
        }
        edges
    }
}

/// Strongly connected components with more than one file (Tarjan).
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(walk: &mut Walk<'a>, node: &'a str) {
        let n = walk.index.len();
        walk.index.insert(node, n);
        walk.low.insert(node, n);
        walk.stack.push(node);
        for next in walk.edges.get(node).into_iter().flatten() {
            if !walk.index.contains_key(next.as_str()) {
                visit(walk, next);
                let low = walk.low[node].min(walk.low[next.as_str()]);
                walk.low.insert(node, low);
            } else if walk.stack.contains(&next.as_str()) {
                let low = walk.low[node].min(walk.index[next.as_str()]);
                walk.low.insert(node, low);
            }
        }
        if walk.low[node] == walk.index[node] {
            let mut component = Vec::new();
            while let Some(top) = walk.stack.pop() {
                component.push(top.to_owned());
                if top == node {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                walk.found.push(component);
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for node in edges.keys() {
        if !walk.index.contains_key(node.as_str()) {
            visit(&mut walk, node);
        }
    }
    walk.found
}

fn layer_of(rel: &str) -> Option<usize> {
    let top = rel.split('/').next()?.trim_end_matches(".rs");
    LAYERS.iter().position(|layer| layer.contains(&top))
}

#[test]
fn no_file_level_import_circles_in_src() {
    let edges = read_tree().dependencies();
    let found: Vec<String> = circles(&edges)
        .into_iter()
        .map(|circle| {
            let members: BTreeSet<&String> = circle.iter().collect();
            circle
                .iter()
                .map(|f| {
                    let into: Vec<String> = edges[f]
                        .iter()
                        .filter(|t| members.contains(t))
                        .map(|t| format!("src/{t}"))
                        .collect();
                    format!("  src/{f} imports {}", into.join(", "))
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect();
    assert!(
        found.is_empty(),
        "error: files under src/ import each other in a circle; move what both need into a file \
         of its own that imports neither:\n{}",
        found.join("\n\n")
    );
}

#[test]
fn lower_layers_never_import_higher_ones() {
    let tree = read_tree();
    let mut wrong = Vec::new();
    for (from, targets) in tree.dependencies() {
        let Some(from_layer) = layer_of(&from) else {
            continue;
        };
        for to in targets {
            if layer_of(&to).is_some_and(|to_layer| to_layer > from_layer) {
                wrong.push(format!("  src/{from} imports src/{to}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "error: a lower layer imports a higher one (the order is in tests/all/architecture.rs, \
         LAYERS, and ARCHITECTURE.md):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn every_top_level_module_has_a_layer() {
    let tree = read_tree();
    let unplaced: BTreeSet<&str> = tree
        .files
        .keys()
        .filter(|rel| *rel != "lib.rs" && layer_of(rel).is_none())
        .map(|rel| rel.split('/').next().unwrap())
        .collect();
    assert!(
        unplaced.is_empty(),
        "error: add these modules to LAYERS in tests/all/architecture.rs: {unplaced:?}"
    );
}

/// The checker sees a circle when there is one (a made-up tree of two files).
#[test]
fn the_circle_finder_finds_a_planted_circle() {
    let edges: BTreeMap<String, BTreeSet<String>> = [
        ("a.rs", vec!["b.rs"]),
        ("b.rs", vec!["a.rs"]),
        ("c.rs", vec!["a.rs"]),
    ]
    .into_iter()
    .map(|(f, to)| (f.to_owned(), to.into_iter().map(str::to_owned).collect()))
    .collect();
    assert_eq!(
        circles(&edges),
        vec![vec!["a.rs".to_owned(), "b.rs".to_owned()]]
    );
}

/// ARCHITECTURE.md describes today's code: every top-level module of `src/` has its row in the
/// module table (`| \`name/\` |`, or `name.rs` for a single file).
#[test]
fn architecture_md_names_every_top_level_module() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(root.join("src")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let shown = if path.is_dir() {
            format!("`{name}/`")
        } else if name == "lib.rs" {
            continue;
        } else {
            format!("`{name}`")
        };
        if !text.contains(&shown) {
            missing.push(shown);
        }
    }
    missing.sort();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md does not name {missing:?}: add a row to its module table"
    );
}
