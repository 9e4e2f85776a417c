//! The environment layer: `HYPERSAGA_<SECTION>__<KEY>…` variables that override the file.
//!
//! The mapping is mechanical: strip `HYPERSAGA_`, split on `__`, lower-case each part, and
//! the parts are the setting's path (`HYPERSAGA_COORDINATOR__LEASE_MS` →
//! `coordinator.lease_ms`). A part that is a number indexes a list
//! (`HYPERSAGA_TENANTS__0__AZURE__CLIENT_SECRET` → `tenants[0].azure.client_secret`; the next
//! free index appends an entry), a map takes any key (`HYPERSAGA_QUOTAS__TENANTS__ACME__MAX_CLUSTERS`),
//! and a path that stops at a section or a list sets all of it at once in figment's value
//! syntax (`HYPERSAGA_TENANTS__0__TOKENS=[sha256:…, sha256:…]`). Values are parsed as figment
//! parses them (`30` is a number, `true` a boolean, anything unparsable a string).
//!
//! The client commands' own variables share the prefix ([`CLIENT_VARIABLES`]) and are not
//! settings. Any other `HYPERSAGA_` variable must name a setting: a misspelt override that was
//! silently ignored would run a service with a value nobody chose, so it is refused, naming the
//! variable, as an unknown key in the file is.

use std::collections::BTreeSet;

use figment::Profile;
use figment::value::{Dict, Map, Value};
use figment::{Metadata, Provider};

use crate::Problem;

pub const PREFIX: &str = "HYPERSAGA_";

/// Variables of the client commands (`hypersaga cluster …`, `audit tail`) and of `serve`'s own
/// flags, which share the prefix without being settings: a user who exported one for the
/// client must still be able to start a service in the same shell.
pub const CLIENT_VARIABLES: [&str; 9] = [
    "HYPERSAGA_CONFIG",
    "HYPERSAGA_ADMIN_TOKEN",
    "HYPERSAGA_ENDPOINTS",
    "HYPERSAGA_SERVER",
    "HYPERSAGA_CA",
    "HYPERSAGA_TOKEN",
    "HYPERSAGA_NATS_URL",
    "HYPERSAGA_NATS_CREDENTIALS",
    "HYPERSAGA_NATS_CA",
];

/// Whether `name` is one of the client commands' variables rather than a setting.
pub fn is_client_variable(name: &str) -> bool {
    CLIENT_VARIABLES.contains(&name)
}

/// The environment variable that sets `path` (`coordinator.lease_ms` →
/// `HYPERSAGA_COORDINATOR__LEASE_MS`).
pub fn variable_for(path: &[&str]) -> String {
    format!("{PREFIX}{}", path.join("__").to_ascii_uppercase())
}

/// One segment of a setting's path: a field, any list index, or any map key.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Segment {
    Field(String),
    Index,
    Key,
}

/// Every setting's path, from a configuration with every optional part present (see
/// [`crate::Config::every_setting`]): `Index` where a list is, `Key` where a map is.
fn patterns() -> BTreeSet<Vec<Segment>> {
    fn walk(v: &serde_json::Value, path: &mut Vec<Segment>, out: &mut BTreeSet<Vec<Segment>>) {
        match v {
            serde_json::Value::Object(fields) => {
                for (k, v) in fields {
                    // The sample's maps have one entry named `*`.
                    path.push(if k == "*" {
                        Segment::Key
                    } else {
                        Segment::Field(k.clone())
                    });
                    walk(v, path, out);
                    path.pop();
                }
            }
            serde_json::Value::Array(items) => {
                path.push(Segment::Index);
                for item in items.iter().take(1) {
                    walk(item, path, out);
                }
                out.insert(path.clone());
                path.pop();
            }
            _ => {
                out.insert(path.clone());
            }
        }
    }
    let mut out = BTreeSet::new();
    let sample = serde_json::to_value(crate::Config::every_setting()).unwrap_or_default();
    walk(&sample, &mut Vec::new(), &mut out);
    out
}

/// Every setting as people write it: `tenants[].azure.client_secret`, `quotas.tenants.<id>.…`.
pub fn settings() -> Vec<String> {
    patterns()
        .into_iter()
        .map(|p| {
            let mut s = String::new();
            for seg in p {
                match seg {
                    Segment::Field(f) => {
                        if !s.is_empty() {
                            s.push('.');
                        }
                        s.push_str(&f);
                    }
                    Segment::Index => s.push_str("[]"),
                    Segment::Key => s.push_str(".<key>"),
                }
            }
            s
        })
        .collect()
}

/// Whether `path` (lower-cased parts) names a setting, or a section or list holding some;
/// if so, which of its parts are list indices.
fn matching(patterns: &BTreeSet<Vec<Segment>>, path: &[String]) -> Option<Vec<bool>> {
    patterns.iter().find_map(|p| {
        let fits = p.len() >= path.len()
            && p.iter().zip(path).all(|(seg, part)| match seg {
                Segment::Field(f) => f == part,
                Segment::Index => part.parse::<usize>().is_ok(),
                Segment::Key => !part.is_empty(),
            });
        fits.then(|| p.iter().map(|s| *s == Segment::Index).collect())
    })
}

fn names_a_setting(patterns: &BTreeSet<Vec<Segment>>, path: &[String]) -> bool {
    matching(patterns, path).is_some()
}

/// The `HYPERSAGA_` overrides found in the environment, checked.
pub struct EnvLayer {
    /// In name order.
    vars: Vec<Var>,
}

struct Var {
    name: String,
    path: Vec<String>,
    /// Which parts of the setting's path (and beyond, for a section) are list indices.
    indices: Vec<bool>,
    value: String,
}

impl EnvLayer {
    /// Reads `vars` (the process environment, or a test's), keeping those that name settings
    /// and reporting the others.
    pub fn read(vars: impl IntoIterator<Item = (String, String)>) -> (Self, Vec<Problem>) {
        let patterns = patterns();
        let mut problems = Vec::new();
        let mut kept = Vec::new();
        let mut vars: Vec<_> = vars
            .into_iter()
            .filter(|(k, _)| k.starts_with(PREFIX) && !is_client_variable(k))
            .collect();
        vars.sort();
        for (name, value) in vars {
            let rest = &name[PREFIX.len()..];
            let path: Vec<String> = rest.split("__").map(str::to_ascii_lowercase).collect();
            if path.iter().any(String::is_empty) {
                problems.push(Problem::new(
                    &name,
                    "an empty part between `__` separators names no setting",
                ));
                continue;
            }
            let Some(indices) = matching(&patterns, &path) else {
                problems.push(Problem::new(&name, unknown(&patterns, &path)));
                continue;
            };
            kept.push(Var {
                name,
                path,
                indices,
                value,
            });
        }
        (Self { vars: kept }, problems)
    }

    /// Applies the overrides to `base` (defaults and file): what this layer provides is, for
    /// each variable, the value at its path up to its first list index (a list is replaced
    /// whole when merged, so it must be the base's list with the override applied), or at
    /// its whole path.
    pub fn over(self, base: Dict) -> (EnvProvider, Vec<Problem>) {
        let mut merged = Value::from(base);
        let mut problems = Vec::new();
        let mut anchors: Vec<Vec<String>> = Vec::new();
        for var in &self.vars {
            let value: Value = var
                .value
                .parse()
                .unwrap_or_else(|_| Value::from(var.value.clone()));
            match set(&mut merged, &var.path, &var.indices, value) {
                Ok(anchor) => anchors.push(var.path[..anchor].to_vec()),
                Err(why) => problems.push(Problem::new(&var.name, why)),
            }
        }
        let mut data = Value::from(Dict::new());
        for anchor in anchors {
            if let Some(v) = get(&merged, &anchor) {
                // Anchors are checked paths into `merged`, and `data` is a tree of dicts.
                let _ = set(&mut data, &anchor, &[], v.clone());
            }
        }
        let data = match data {
            Value::Dict(_, d) => d,
            _ => Dict::new(),
        };
        (EnvProvider { data }, problems)
    }
}

/// Says why `path` is no setting, and what was probably meant.
fn unknown(patterns: &BTreeSet<Vec<Segment>>, path: &[String]) -> String {
    let dotted = path.join(".");
    match guess(patterns, path) {
        Some(g) => {
            let parts: Vec<&str> = g.iter().map(String::as_str).collect();
            format!(
                "no setting `{dotted}`; did you mean {}?",
                variable_for(&parts)
            )
        }
        None => format!(
            "no setting `{dotted}` (variables are HYPERSAGA_<SECTION>__<KEY>, see `hypersaga serve --help`)"
        ),
    }
}

/// The setting `path` probably meant: one `_` where `__` was meant (`HYPERSAGA_LOG_FILTER`),
/// else a setting of the same depth at most two typos away (`WORKER__CONCURENCY`).
fn guess(patterns: &BTreeSet<Vec<Segment>>, path: &[String]) -> Option<Vec<String>> {
    let last = path.len() - 1;
    for (i, _) in path[last].match_indices('_') {
        let mut fixed = path[..last].to_vec();
        fixed.push(path[last][..i].to_owned());
        fixed.push(path[last][i + 1..].to_owned());
        if names_a_setting(patterns, &fixed) {
            return Some(fixed);
        }
    }
    patterns
        .iter()
        .filter(|p| p.len() == path.len())
        .filter_map(|p| {
            let mut typos = 0;
            let mut fixed = Vec::with_capacity(p.len());
            for (seg, part) in p.iter().zip(path) {
                match seg {
                    Segment::Field(f) => {
                        typos += edit_distance(f, part);
                        fixed.push(f.clone());
                    }
                    Segment::Index if part.parse::<usize>().is_err() => return None,
                    Segment::Index | Segment::Key => fixed.push(part.clone()),
                }
            }
            (typos <= 2).then_some((typos, fixed))
        })
        .min_by_key(|(typos, _)| *typos)
        .map(|(_, fixed)| fixed)
}

/// Levenshtein distance: insertions, deletions and substitutions of one character.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

fn get<'a>(v: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut v = v;
    for part in path {
        v = match v {
            Value::Dict(_, d) => d.get(part)?,
            Value::Array(_, a) => a.get(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(v)
}

/// Sets `path` in `root` to `value`, making what is missing on the way (a list where
/// `indices` says the next part is an index, else a dict); a number indexes an existing list
/// (or appends at its end). Returns how many parts lead to the first list.
fn set(root: &mut Value, path: &[String], indices: &[bool], value: Value) -> Result<usize, String> {
    let empty = |depth: usize| {
        if indices.get(depth).copied().unwrap_or(false) {
            Value::from(Vec::<Value>::new())
        } else {
            Value::from(Dict::new())
        }
    };
    let mut anchor = None;
    let mut v = root;
    for (depth, part) in path.iter().enumerate() {
        let last = depth + 1 == path.len();
        if let Value::Array(_, items) = v {
            anchor.get_or_insert(depth);
            let Ok(i) = part.parse::<usize>() else {
                return Err(format!("`{part}` is not a list index"));
            };
            if i > items.len() {
                return Err(format!(
                    "{} has {} entries: the next one is index {}, not {i}",
                    path[..depth].join("."),
                    items.len(),
                    items.len()
                ));
            }
            if i == items.len() {
                items.push(empty(depth + 1));
            }
            let slot = &mut items[i];
            if last {
                *slot = value;
                return Ok(anchor.unwrap_or(path.len()));
            }
            v = slot;
            continue;
        }
        if !matches!(v, Value::Dict(..)) {
            *v = Value::from(Dict::new());
        }
        let Value::Dict(_, d) = v else {
            return Err("not a section".into());
        };
        if last {
            d.insert(part.clone(), value);
            return Ok(anchor.unwrap_or(path.len()));
        }
        v = d.entry(part.clone()).or_insert_with(|| empty(depth + 1));
    }
    Ok(anchor.unwrap_or(path.len()))
}

/// The overrides as a figment provider, so that a value of the wrong type is reported with
/// the variable that set it.
pub struct EnvProvider {
    data: Dict,
}

impl Provider for EnvProvider {
    fn metadata(&self) -> Metadata {
        Metadata::named("HYPERSAGA_ environment variables")
            .interpolater(|_: &Profile, keys: &[&str]| variable_for(keys))
    }

    fn data(&self) -> Result<Map<Profile, Dict>, figment::Error> {
        Ok(Profile::Default.collect(self.data.clone()))
    }
}
