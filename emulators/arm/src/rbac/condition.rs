//! Role-assignment conditions (Azure ABAC, `conditionVersion` 2.0) where ARM applies them: to
//! the delegation of role assignments. A condition on an assignment that grants
//! `Microsoft.Authorization/roleAssignments/write` or `/delete` (Role Based Access Control
//! Administrator, User Access Administrator, Owner) constrains which assignments its holder may
//! make or remove: `@Request[…]` attributes are the assignment being written, `@Resource[…]`
//! the one being deleted (`delegate-role-assignments-examples.md` in MicrosoftDocs/azure-docs).
//! Conditions constrain no other control-plane action (storage's constrain data actions, which
//! the emulator does not serve).
//!
//! The language read is what those examples use: `(`, `)`, `!`/`NOT`, `AND`/`&&`, `OR`/`||`
//! (`NOT` binding tightest, then `AND`, then `OR`); `ActionMatches{'…'}`; and
//! `@Request|@Resource[Microsoft.Authorization/roleAssignments:RoleDefinitionId|PrincipalId|
//! PrincipalType] <operator> <value or {set}>` with the `Guid…` and `String…` operators, bare or
//! quantified (`ForAnyOfAnyValues:`, `ForAnyOfAllValues:`, …). A condition outside that subset,
//! or a comparison on an attribute the request does not have, grants nothing: never more than
//! Azure would.

use uuid::Uuid;

use super::permissions::matches;

/// The attributes of a role assignment a condition can compare.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Attributes {
    pub role_definition_id: Option<Uuid>,
    pub principal_id: Option<Uuid>,
    pub principal_type: Option<String>,
}

/// What a condition is evaluated against.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Facts<'a> {
    pub action: &'a str,
    /// `@Request`: the assignment a PUT writes.
    pub request: Option<&'a Attributes>,
    /// `@Resource`: the assignment a DELETE removes.
    pub resource: Option<&'a Attributes>,
}

const ATTRIBUTE_PREFIX: &str = "Microsoft.Authorization/roleAssignments:";

impl Attributes {
    /// The assignment a role-assignment PUT body describes, read leniently: what is missing
    /// or malformed stays unknown (the PUT itself refuses the body later).
    pub fn of_body(body: &[u8]) -> Self {
        let v: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
        let props = &v["properties"];
        let text = |k: &str| props.get(k).and_then(serde_json::Value::as_str);
        Self {
            role_definition_id: text("roleDefinitionId")
                .and_then(|id| id.rsplit('/').next())
                .and_then(|g| Uuid::parse_str(g).ok()),
            principal_id: text("principalId").and_then(|g| Uuid::parse_str(g).ok()),
            principal_type: text("principalType").map(str::to_owned),
        }
    }

    /// A stored assignment's.
    pub fn of_assignment(a: &crate::store::StoredAssignment) -> Self {
        Self {
            role_definition_id: a
                .role_definition_id
                .rsplit('/')
                .next()
                .and_then(|g| Uuid::parse_str(g).ok()),
            principal_id: Uuid::parse_str(&a.principal_id).ok(),
            principal_type: Some(a.principal_type.clone()),
        }
    }
}

/// Whether conditions constrain `action` at all.
pub(crate) fn constrains(action: &str) -> bool {
    matches("Microsoft.Authorization/roleAssignments/write", action)
        || matches("Microsoft.Authorization/roleAssignments/delete", action)
}

/// Whether `condition` allows the request `facts` describe; `false` for one it cannot read.
pub(crate) fn allows(condition: &str, facts: &Facts<'_>) -> bool {
    let Some(tokens) = tokenize(condition) else {
        return false;
    };
    let mut p = Parser { tokens, at: 0 };
    match p.or() {
        Some(expr) if p.at == p.tokens.len() => expr.eval(facts),
        _ => false,
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Open,
    Close,
    OpenSet,
    CloseSet,
    OpenAttr,
    CloseAttr,
    Comma,
    Not,
    And,
    Or,
    /// `'…'`
    Quoted(String),
    /// `@Request`, `@Resource`, …
    Source(String),
    /// Names, operators, GUIDs, attribute names.
    Word(String),
}

fn word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '/' | '-' | '*')
}

fn tokenize(s: &str) -> Option<Vec<Token>> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let two: String = chars[i..chars.len().min(i + 2)].iter().collect();
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let simple = match c {
            '(' => Some(Token::Open),
            ')' => Some(Token::Close),
            '{' => Some(Token::OpenSet),
            '}' => Some(Token::CloseSet),
            '[' => Some(Token::OpenAttr),
            ']' => Some(Token::CloseAttr),
            ',' => Some(Token::Comma),
            '!' => Some(Token::Not),
            _ => None,
        };
        if let Some(t) = simple {
            out.push(t);
            i += 1;
        } else if two == "&&" {
            out.push(Token::And);
            i += 2;
        } else if two == "||" {
            out.push(Token::Or);
            i += 2;
        } else if c == '\'' {
            let end = chars[i + 1..].iter().position(|&q| q == '\'')? + i + 1;
            out.push(Token::Quoted(chars[i + 1..end].iter().collect()));
            i = end + 1;
        } else if c == '@' || word_char(c) {
            let start = i;
            i += 1;
            while i < chars.len() && word_char(chars[i]) {
                i += 1;
            }
            let w: String = chars[start..i].iter().collect();
            out.push(match w.as_str() {
                _ if c == '@' => Token::Source(w),
                "AND" | "and" => Token::And,
                "OR" | "or" => Token::Or,
                "NOT" | "not" => Token::Not,
                _ => Token::Word(w),
            });
        } else {
            return None;
        }
    }
    Some(out)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    Request,
    Resource,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Attribute {
    RoleDefinitionId,
    PrincipalId,
    PrincipalType,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Compare {
    GuidEquals,
    GuidNotEquals,
    StringEquals,
    StringNotEquals,
    StringEqualsIgnoreCase,
    StringNotEqualsIgnoreCase,
}

/// Over the set of values: some (`AnyValues`) or every (`AllValues`) one must compare true.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Quantifier {
    Any,
    All,
}

#[derive(Clone, Debug)]
enum Expr {
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    ActionMatches(String),
    Compare {
        source: Source,
        attribute: Attribute,
        compare: Compare,
        quantifier: Quantifier,
        values: Vec<String>,
    },
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.at).cloned();
        self.at += 1;
        t
    }

    fn expect(&mut self, t: &Token) -> Option<()> {
        (self.next()? == *t).then_some(())
    }

    fn or(&mut self) -> Option<Expr> {
        let mut left = self.and()?;
        while self.peek() == Some(&Token::Or) {
            self.at += 1;
            left = Expr::Or(Box::new(left), Box::new(self.and()?));
        }
        Some(left)
    }

    fn and(&mut self) -> Option<Expr> {
        let mut left = self.unary()?;
        while self.peek() == Some(&Token::And) {
            self.at += 1;
            left = Expr::And(Box::new(left), Box::new(self.unary()?));
        }
        Some(left)
    }

    fn unary(&mut self) -> Option<Expr> {
        if self.peek() == Some(&Token::Not) {
            self.at += 1;
            return Some(Expr::Not(Box::new(self.unary()?)));
        }
        self.primary()
    }

    fn primary(&mut self) -> Option<Expr> {
        match self.next()? {
            Token::Open => {
                let e = self.or()?;
                self.expect(&Token::Close)?;
                Some(e)
            }
            Token::Word(w) if w == "ActionMatches" => {
                self.expect(&Token::OpenSet)?;
                let Token::Quoted(pattern) = self.next()? else {
                    return None;
                };
                self.expect(&Token::CloseSet)?;
                Some(Expr::ActionMatches(pattern))
            }
            Token::Source(s) => self.comparison(&s),
            _ => None,
        }
    }

    fn comparison(&mut self, source: &str) -> Option<Expr> {
        let source = match source {
            "@Request" => Source::Request,
            "@Resource" => Source::Resource,
            _ => return None,
        };
        self.expect(&Token::OpenAttr)?;
        let Token::Word(name) = self.next()? else {
            return None;
        };
        self.expect(&Token::CloseAttr)?;
        let attribute = match name.strip_prefix(ATTRIBUTE_PREFIX)? {
            "RoleDefinitionId" => Attribute::RoleDefinitionId,
            "PrincipalId" => Attribute::PrincipalId,
            "PrincipalType" => Attribute::PrincipalType,
            _ => return None,
        };
        let Token::Word(op) = self.next()? else {
            return None;
        };
        let (quantifier, bare) = match op.split_once(':') {
            None => (Quantifier::Any, op.as_str()),
            // The attribute is single-valued, so only the quantifier over the set matters.
            Some((q, bare)) => match q {
                "ForAnyOfAnyValues" | "ForAllOfAnyValues" => (Quantifier::Any, bare),
                "ForAnyOfAllValues" | "ForAllOfAllValues" => (Quantifier::All, bare),
                _ => return None,
            },
        };
        let compare = match bare {
            "GuidEquals" => Compare::GuidEquals,
            "GuidNotEquals" => Compare::GuidNotEquals,
            "StringEquals" => Compare::StringEquals,
            "StringNotEquals" => Compare::StringNotEquals,
            "StringEqualsIgnoreCase" => Compare::StringEqualsIgnoreCase,
            "StringNotEqualsIgnoreCase" => Compare::StringNotEqualsIgnoreCase,
            _ => return None,
        };
        let values = self.values()?;
        Some(Expr::Compare {
            source,
            attribute,
            compare,
            quantifier,
            values,
        })
    }

    /// One value, or `{v, v, …}`; a value is a bare word (a GUID) or a quoted string.
    fn values(&mut self) -> Option<Vec<String>> {
        let value = |t: Token| match t {
            Token::Word(w) | Token::Quoted(w) => Some(w),
            _ => None,
        };
        if self.peek() != Some(&Token::OpenSet) {
            return Some(vec![value(self.next()?)?]);
        }
        self.at += 1;
        let mut out = vec![value(self.next()?)?];
        loop {
            match self.next()? {
                Token::Comma => out.push(value(self.next()?)?),
                Token::CloseSet => return Some(out),
                _ => return None,
            }
        }
    }
}

impl Compare {
    fn holds(self, actual: &str, value: &str) -> bool {
        let guid = |s: &str| Uuid::parse_str(s.trim()).ok();
        match self {
            Compare::GuidEquals => guid(actual).is_some_and(|a| Some(a) == guid(value)),
            Compare::GuidNotEquals => {
                guid(actual).is_some_and(|a| guid(value).is_some_and(|v| a != v))
            }
            Compare::StringEquals => actual == value,
            Compare::StringNotEquals => actual != value,
            Compare::StringEqualsIgnoreCase => actual.eq_ignore_ascii_case(value),
            Compare::StringNotEqualsIgnoreCase => !actual.eq_ignore_ascii_case(value),
        }
    }
}

impl Expr {
    fn eval(&self, facts: &Facts<'_>) -> bool {
        match self {
            Expr::And(a, b) => a.eval(facts) && b.eval(facts),
            Expr::Or(a, b) => a.eval(facts) || b.eval(facts),
            Expr::Not(e) => !e.eval(facts),
            Expr::ActionMatches(pattern) => matches(pattern, facts.action),
            Expr::Compare {
                source,
                attribute,
                compare,
                quantifier,
                values,
            } => {
                let attrs = match source {
                    Source::Request => facts.request,
                    Source::Resource => facts.resource,
                };
                let actual = attrs.and_then(|a| match attribute {
                    Attribute::RoleDefinitionId => a.role_definition_id.map(|g| g.to_string()),
                    Attribute::PrincipalId => a.principal_id.map(|g| g.to_string()),
                    Attribute::PrincipalType => a.principal_type.clone(),
                });
                // An attribute the request does not have compares false, whatever the operator.
                let Some(actual) = actual else {
                    return false;
                };
                match quantifier {
                    Quantifier::Any => values.iter().any(|v| compare.holds(&actual, v)),
                    Quantifier::All => values.iter().all(|v| compare.holds(&actual, v)),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WRITE: &str = "Microsoft.Authorization/roleAssignments/write";
    const DELETE: &str = "Microsoft.Authorization/roleAssignments/delete";
    const READER: &str = "acdd72a7-3385-48ef-bd42-f606fba81ae7";
    const CONTRIBUTOR: &str = "b24988ac-6180-42a0-ab88-20f7382dd24c";
    const OWNER: &str = "8e3af657-a8ff-443c-a75c-2fe8c4bcb635";

    /// "Constrain roles" of `delegate-role-assignments-examples.md`: Reader and Contributor,
    /// to service principals only.
    fn constrain_roles() -> String {
        format!(
            "(
              (
               !(ActionMatches{{'{WRITE}'}})
              )
              OR
              (
               @Request[Microsoft.Authorization/roleAssignments:RoleDefinitionId] ForAnyOfAnyValues:GuidEquals {{{READER}, {CONTRIBUTOR}}}
               AND
               @Request[Microsoft.Authorization/roleAssignments:PrincipalType] ForAnyOfAnyValues:StringEqualsIgnoreCase {{'ServicePrincipal'}}
              )
             )
             AND
             (
              (
               !(ActionMatches{{'{DELETE}'}})
              )
              OR
              (
               @Resource[Microsoft.Authorization/roleAssignments:RoleDefinitionId] ForAnyOfAnyValues:GuidEquals {{{READER}, {CONTRIBUTOR}}}
              )
             )"
        )
    }

    fn attrs(role: &str, principal_type: Option<&str>) -> Attributes {
        Attributes {
            role_definition_id: Uuid::parse_str(role).ok(),
            principal_id: Some(Uuid::new_v4()),
            principal_type: principal_type.map(str::to_owned),
        }
    }

    fn write(role: &str, principal_type: Option<&str>) -> bool {
        let a = attrs(role, principal_type);
        allows(
            &constrain_roles(),
            &Facts {
                action: WRITE,
                request: Some(&a),
                resource: None,
            },
        )
    }

    #[test]
    fn the_constrain_roles_example_allows_only_its_roles_to_service_principals() {
        assert!(write(READER, Some("ServicePrincipal")));
        assert!(write(CONTRIBUTOR, Some("serviceprincipal")));
        assert!(!write(OWNER, Some("ServicePrincipal")));
        assert!(!write(READER, Some("User")));
        // No principalType sent: nothing to compare, so not allowed.
        assert!(!write(READER, None));
        let existing = attrs(OWNER, None);
        let delete = |a: &Attributes| {
            allows(
                &constrain_roles(),
                &Facts {
                    action: DELETE,
                    request: None,
                    resource: Some(a),
                },
            )
        };
        assert!(!delete(&existing));
        assert!(delete(&attrs(READER, None)));
        assert!(constrains(WRITE) && constrains(DELETE));
        assert!(!constrains(
            "Microsoft.Resources/subscriptions/resourceGroups/write"
        ));
    }

    #[test]
    fn the_privileged_roles_exclusion_allows_everything_else() {
        let c = format!(
            "((!(ActionMatches{{'{WRITE}'}})) OR (@Request[Microsoft.Authorization/roleAssignments:RoleDefinitionId] ForAnyOfAllValues:GuidNotEquals {{{OWNER}, 18d7d88d-d35e-4fb5-a5c3-7773c20a72d9, f58310d9-a9f6-439a-9e8d-f62e7b41a168}})) AND ((!(ActionMatches{{'{DELETE}'}})) OR (@Resource[Microsoft.Authorization/roleAssignments:RoleDefinitionId] ForAnyOfAllValues:GuidNotEquals {{{OWNER}, 18d7d88d-d35e-4fb5-a5c3-7773c20a72d9, f58310d9-a9f6-439a-9e8d-f62e7b41a168}}))"
        );
        let writes = |role: &str| {
            let a = attrs(role, None);
            allows(
                &c,
                &Facts {
                    action: WRITE,
                    request: Some(&a),
                    resource: None,
                },
            )
        };
        assert!(writes(CONTRIBUTOR));
        assert!(!writes(OWNER));
        assert!(!writes("F58310D9-A9F6-439A-9E8D-F62E7B41A168"));
    }

    #[test]
    fn what_cannot_be_read_allows_nothing() {
        let a = attrs(READER, Some("ServicePrincipal"));
        let facts = Facts {
            action: WRITE,
            request: Some(&a),
            resource: None,
        };
        for bad in [
            "",
            "(",
            "ActionMatches{'x'",
            "@Request[Microsoft.Storage/storageAccounts/blobServices/containers:name] StringEquals 'x'",
            "@Principal[Microsoft.Directory/CustomSecurityAttributes/Id:Engineering_Project] StringEquals 'x'",
            "@Request[Microsoft.Authorization/roleAssignments:RoleDefinitionId] GuidIn {x}",
            "@Request[Microsoft.Authorization/roleAssignments:RoleDefinitionId] GuidEquals acdd72a7-3385-48ef-bd42-f606fba81ae7 extra",
        ] {
            assert!(!allows(bad, &facts), "{bad}");
        }
        // NOT binds tighter than AND, AND tighter than OR.
        assert!(allows(
            &format!(
                "!ActionMatches{{'{DELETE}'}} AND ActionMatches{{'{WRITE}'}} OR ActionMatches{{'x'}}"
            ),
            &facts
        ));
        assert!(allows(
            &format!(
                "@Request[Microsoft.Authorization/roleAssignments:RoleDefinitionId] GuidEquals {READER} && !(ActionMatches{{'{DELETE}'}})"
            ),
            &facts
        ));
    }
}
