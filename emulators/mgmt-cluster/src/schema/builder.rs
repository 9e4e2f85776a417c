//! A terse way to write schema trees, so a kind's schema reads like its CRD.
//!
//! ```ignore
//! object([("release", object([("image", string().min_len(1))]).require(&["image"]))])
//! ```
//! Modifiers that do not apply to a node's kind are ignored (e.g. `max_len` on an object).

use serde_json::Value;

use super::{Kind, List, ListType, MapOf, Node, NumberRules, Object, Pattern, Rule, StringRules};

fn node(kind: Kind) -> Node {
    Node {
        kind,
        default: None,
        nullable: false,
        rules: Vec::new(),
    }
}

pub fn string() -> Node {
    node(Kind::String(StringRules::default()))
}

/// An `integer` (`format: int32` or `int64`; the emulator does not range-check formats).
pub fn integer() -> Node {
    node(Kind::Integer(NumberRules::default()))
}

pub fn boolean() -> Node {
    node(Kind::Boolean)
}

pub fn int_or_string() -> Node {
    node(Kind::IntOrString(StringRules::default()))
}

/// Anything; see [`Kind::Any`].
pub fn any() -> Node {
    node(Kind::Any)
}

/// A struct with these properties.
pub fn object<const N: usize>(fields: [(&'static str, Node); N]) -> Node {
    node(Kind::Object(Object {
        fields: fields.into_iter().collect(),
        ..Object::default()
    }))
}

/// A map of string keys to `values` (`additionalProperties`).
pub fn map_of(values: Node) -> Node {
    node(Kind::Map(MapOf {
        values: Box::new(values),
        atomic: false,
        max_properties: None,
    }))
}

fn list(items: Node, list_type: ListType) -> Node {
    node(Kind::List(List {
        items: Box::new(items),
        list_type,
        min_items: None,
        max_items: None,
    }))
}

/// A list replaced as a whole by server-side apply (the CRD default).
pub fn atomic_list(items: Node) -> Node {
    list(items, ListType::Atomic)
}

/// `x-kubernetes-list-type: set`.
pub fn set_list(items: Node) -> Node {
    list(items, ListType::Set)
}

/// `x-kubernetes-list-type: map` with these `x-kubernetes-list-map-keys`.
pub fn map_list(items: Node, keys: &[&'static str]) -> Node {
    list(items, ListType::Map(keys.to_vec()))
}

impl Node {
    fn strings(&mut self) -> Option<&mut StringRules> {
        match &mut self.kind {
            Kind::String(r) | Kind::IntOrString(r) => Some(r),
            _ => None,
        }
    }

    /// `enum`.
    pub fn one_of(mut self, values: &[&'static str]) -> Self {
        if let Some(r) = self.strings() {
            r.one_of = values.to_vec();
        }
        self
    }

    pub fn min_len(mut self, n: usize) -> Self {
        if let Some(r) = self.strings() {
            r.min_len = Some(n);
        }
        self
    }

    pub fn max_len(mut self, n: usize) -> Self {
        if let Some(r) = self.strings() {
            r.max_len = Some(n);
        }
        self
    }

    /// `pattern`; the source is a constant of this crate, covered by the schema tests.
    pub fn pattern(mut self, source: &'static str) -> Self {
        if let Some(r) = self.strings() {
            match regex::Regex::new(source) {
                Ok(regex) => r.pattern = Some(Pattern { source, regex }),
                Err(e) => {
                    tracing::error!(pattern = source, error = %e, "schema pattern does not compile")
                }
            }
        }
        self
    }

    pub fn minimum(mut self, n: i64) -> Self {
        if let Kind::Integer(r) = &mut self.kind {
            r.minimum = Some(n);
        }
        self
    }

    pub fn maximum(mut self, n: i64) -> Self {
        if let Kind::Integer(r) = &mut self.kind {
            r.maximum = Some(n);
        }
        self
    }

    pub fn default(mut self, value: Value) -> Self {
        self.default = Some(value);
        self
    }

    /// An `x-kubernetes-validations` rule (see [`super::rules`]).
    pub fn rule(mut self, rule: Rule) -> Self {
        self.rules.push(rule);
        self
    }

    /// Several `x-kubernetes-validations` rules, in order.
    pub fn rules(mut self, rules: impl IntoIterator<Item = Rule>) -> Self {
        self.rules.extend(rules);
        self
    }

    pub fn nullable(mut self) -> Self {
        self.nullable = true;
        self
    }

    /// `required` properties of an object.
    pub fn require(mut self, names: &[&'static str]) -> Self {
        if let Kind::Object(o) = &mut self.kind {
            o.required = names.to_vec();
        }
        self
    }

    /// `x-kubernetes-map-type: atomic`.
    pub fn atomic(mut self) -> Self {
        match &mut self.kind {
            Kind::Object(o) => o.atomic = true,
            Kind::Map(m) => m.atomic = true,
            _ => {}
        }
        self
    }

    pub fn min_properties(mut self, n: usize) -> Self {
        if let Kind::Object(o) = &mut self.kind {
            o.min_properties = Some(n);
        }
        self
    }

    pub fn max_properties(mut self, n: usize) -> Self {
        match &mut self.kind {
            Kind::Object(o) => o.max_properties = Some(n),
            Kind::Map(m) => m.max_properties = Some(n),
            _ => {}
        }
        self
    }

    pub fn min_items(mut self, n: usize) -> Self {
        if let Kind::List(l) = &mut self.kind {
            l.min_items = Some(n);
        }
        self
    }

    pub fn max_items(mut self, n: usize) -> Self {
        if let Kind::List(l) = &mut self.kind {
            l.max_items = Some(n);
        }
        self
    }
}
