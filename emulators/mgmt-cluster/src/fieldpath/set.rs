//! Sets of field paths — what one manager owns, what a change touched.
//!
//! The tree shape and every operation follow `structured-merge-diff/v6` `fieldpath/set.go`:
//! `members` are paths ending at this level, `children` hold the paths that go deeper. A
//! path can be both (a map-list item that is owned as a whole and has owned fields).
//! Empty children are never kept, so an empty set has no nodes at all.

use std::collections::{BTreeMap, BTreeSet};

use super::element::PathElement;

/// A set of paths, as a tree keyed by path element.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Set {
    pub(super) members: BTreeSet<PathElement>,
    pub(super) children: BTreeMap<PathElement, Set>,
}

impl Set {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the set holds no path.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.values().all(Set::is_empty)
    }

    /// Adds `path` (an empty path is ignored, as in structured-merge-diff).
    pub fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    /// Whether `path` is a member.
    #[cfg(test)]
    pub fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.has(rest)),
        }
    }

    /// Whether `pe` is a member at this level.
    pub fn has_member(&self, pe: &PathElement) -> bool {
        self.members.contains(pe)
    }

    /// The children node of `pe`, if any.
    pub fn child(&self, pe: &PathElement) -> Option<&Set> {
        self.children.get(pe).filter(|c| !c.is_empty())
    }

    /// Every child path element with its subtree.
    pub fn children(&self) -> impl Iterator<Item = (&PathElement, &Set)> {
        self.children.iter()
    }

    /// Every member path element at this level.
    pub fn members(&self) -> impl Iterator<Item = &PathElement> {
        self.members.iter()
    }

    pub fn union(&self, other: &Set) -> Set {
        let mut out = self.clone();
        out.members.extend(other.members.iter().cloned());
        for (pe, child) in &other.children {
            let merged = match out.children.get(pe) {
                Some(mine) => mine.union(child),
                None => child.clone(),
            };
            out.set_child(pe.clone(), merged);
        }
        out
    }

    pub fn intersection(&self, other: &Set) -> Set {
        let mut out = Set::new();
        out.members = self.members.intersection(&other.members).cloned().collect();
        for (pe, child) in &self.children {
            if let Some(theirs) = other.children.get(pe) {
                out.set_child(pe.clone(), child.intersection(theirs));
            }
        }
        out
    }

    /// Paths in `self` that are not in `other`; a member of `other` does not remove the
    /// paths below it (see [`Set::recursive_difference`] for that).
    pub fn difference(&self, other: &Set) -> Set {
        let mut out = Set::new();
        out.members = self.members.difference(&other.members).cloned().collect();
        for (pe, child) in &self.children {
            let diff = match other.children.get(pe) {
                Some(theirs) => child.difference(theirs),
                None => child.clone(),
            };
            out.set_child(pe.clone(), diff);
        }
        out
    }

    /// Like [`Set::difference`], but a member of `other` also removes everything below it.
    pub fn recursive_difference(&self, other: &Set) -> Set {
        let mut out = Set::new();
        out.members = self.members.difference(&other.members).cloned().collect();
        for (pe, child) in &self.children {
            if other.members.contains(pe) {
                continue;
            }
            let diff = match other.children.get(pe) {
                Some(theirs) => child.recursive_difference(theirs),
                None => child.clone(),
            };
            out.set_child(pe.clone(), diff);
        }
        out
    }

    /// Every member path, members of a level before the levels below, each in order
    /// (`Set.Iterate`).
    pub fn paths(&self) -> Vec<Vec<PathElement>> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<Vec<PathElement>>) {
        for m in &self.members {
            let mut p = prefix.clone();
            p.push(m.clone());
            out.push(p);
        }
        for (pe, child) in &self.children {
            prefix.push(pe.clone());
            child.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    /// Sets the subtree of `pe`, dropping it when empty.
    pub(super) fn set_child(&mut self, pe: PathElement, child: Set) {
        if child.is_empty() {
            self.children.remove(&pe);
        } else {
            self.children.insert(pe, child);
        }
    }

    /// Adds `pe` as a member at this level.
    pub fn insert_member(&mut self, pe: PathElement) {
        self.members.insert(pe);
    }

    /// Mutable access to the subtree of `pe`, created when missing; callers fill it.
    pub fn child_mut(&mut self, pe: PathElement) -> &mut Set {
        self.children.entry(pe).or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fieldpath::element::path_string;

    fn f(name: &str) -> PathElement {
        PathElement::Field(name.into())
    }

    #[test]
    fn set_algebra() {
        let mut a = Set::new();
        a.insert(&[f("spec"), f("a")]);
        a.insert(&[f("spec"), f("b")]);
        a.insert(&[f("status")]);
        let mut b = Set::new();
        b.insert(&[f("spec"), f("b")]);
        b.insert(&[f("spec")]);
        assert!(a.has(&[f("spec"), f("a")]));
        assert!(!a.has(&[f("spec")]));
        let diff = a.difference(&b);
        assert!(diff.has(&[f("spec"), f("a")]) && !diff.has(&[f("spec"), f("b")]));
        let rdiff = a.recursive_difference(&b);
        assert!(!rdiff.has(&[f("spec"), f("a")]) && rdiff.has(&[f("status")]));
        let both = a.intersection(&b);
        assert_eq!(
            both.paths()
                .iter()
                .map(|p| path_string(p))
                .collect::<Vec<_>>(),
            [".spec.b"]
        );
        assert_eq!(a.union(&b).paths().len(), 4);
        assert!(a.difference(&a).is_empty());
    }
}
