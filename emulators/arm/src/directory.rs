//! The tenants' Entra directories: app registrations, their federated identity credentials and
//! their service principals, as Microsoft Graph (`crate::graph`) writes them.
//!
//! Three parts of the emulator read them: Graph itself, the token endpoint (an app's appId as a
//! `client_id`, its credentials to match a client assertion against, its service principal as
//! the token's `oid`), and ARM's role-assignment check (a service principal as a `principalId`).
//! They live in the [`crate::store::Store`], under the one lock, so all three see one state.
//!
//! Every object belongs to one directory (tenant) and is invisible from any other: each lookup
//! names the tenant. The rules kept here are the ones that span objects (a credential's name
//! and its issuer + subject unique per app, at most 20 credentials, one service principal per
//! app); the shape of one request body is Graph's to check.

mod error;
mod model;

use time::OffsetDateTime;
use uuid::Uuid;

pub(crate) use error::{CredentialError, PrincipalError};
pub use model::{AppRegistration, Application, FederatedCredential, ServicePrincipal};

/// Most federated identity credentials one app may have
/// (`workload-identity-federation-considerations`: 20 per app or user-assigned identity).
pub(crate) const MAX_CREDENTIALS_PER_APP: usize = 20;

/// How a request names an app: by object id (`/applications/{id}`) or by client id
/// (`/applications(appId='{appId}')`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AppKey {
    ObjectId(Uuid),
    AppId(Uuid),
}

/// What a new app registration is made from.
#[derive(Clone, Debug)]
pub(crate) struct NewApplication {
    pub display_name: String,
    pub description: Option<String>,
    pub sign_in_audience: String,
}

/// What a new federated identity credential is made from.
#[derive(Clone, Debug)]
pub(crate) struct NewCredential {
    pub name: String,
    pub issuer: String,
    pub subject: String,
    pub audiences: Vec<String>,
    pub description: Option<String>,
}

/// Every directory's objects.
#[derive(Debug, Default)]
pub(crate) struct Directory {
    apps: Vec<Application>,
    principals: Vec<ServicePrincipal>,
}

/// GUID strings compare as GUIDs (any case, any of the forms `Uuid` reads).
fn same_guid(a: &str, b: &Uuid) -> bool {
    Uuid::parse_str(a).is_ok_and(|g| &g == b)
}

fn in_tenant(object_tenant: &str, tenant: &str) -> bool {
    object_tenant.eq_ignore_ascii_case(tenant)
}

impl AppKey {
    fn names(&self, app: &Application) -> bool {
        match self {
            AppKey::ObjectId(id) => same_guid(&app.id, id),
            AppKey::AppId(id) => same_guid(&app.app_id, id),
        }
    }
}

impl Directory {
    /// Forgets every object of every directory.
    pub fn clear(&mut self) {
        self.apps.clear();
        self.principals.clear();
    }

    /// Registers an app in `tenant`, with fresh object and client ids.
    pub fn create_app(
        &mut self,
        tenant: &str,
        new: NewApplication,
        now: OffsetDateTime,
    ) -> Application {
        let app = Application {
            tenant_id: tenant.to_owned(),
            id: Uuid::new_v4().to_string(),
            app_id: Uuid::new_v4().to_string(),
            display_name: new.display_name,
            description: new.description,
            sign_in_audience: new.sign_in_audience,
            created: now,
            federated_identity_credentials: Vec::new(),
        };
        self.apps.push(app.clone());
        app
    }

    /// The apps of `tenant`, in the order they were made.
    pub fn apps<'a>(&'a self, tenant: &'a str) -> impl Iterator<Item = &'a Application> + 'a {
        self.apps
            .iter()
            .filter(move |a| in_tenant(&a.tenant_id, tenant))
    }

    /// Every app of every directory, each with its service principal (the admin API's view).
    pub fn registrations(&self, tenant: Option<&str>) -> Vec<AppRegistration> {
        self.apps
            .iter()
            .filter(|a| tenant.is_none_or(|t| in_tenant(&a.tenant_id, t)))
            .map(|a| AppRegistration {
                application: a.clone(),
                service_principal: Uuid::parse_str(&a.app_id)
                    .ok()
                    .and_then(|id| self.principal_of_app(&a.tenant_id, &id))
                    .cloned(),
            })
            .collect()
    }

    pub fn app(&self, tenant: &str, key: AppKey) -> Option<&Application> {
        self.apps
            .iter()
            .find(|a| in_tenant(&a.tenant_id, tenant) && key.names(a))
    }

    fn app_mut(&mut self, tenant: &str, key: AppKey) -> Option<&mut Application> {
        self.apps
            .iter_mut()
            .find(|a| in_tenant(&a.tenant_id, tenant) && key.names(a))
    }

    /// Deletes an app, its credentials, and its service principal in its own directory (the
    /// principal goes with the app it instantiates). Role assignments naming the principal
    /// stay, as ARM keeps them for a deleted principal.
    pub fn delete_app(&mut self, tenant: &str, key: AppKey) -> Option<Application> {
        let at = self
            .apps
            .iter()
            .position(|a| in_tenant(&a.tenant_id, tenant) && key.names(a))?;
        let app = self.apps.remove(at);
        self.principals
            .retain(|p| !(in_tenant(&p.tenant_id, tenant) && p.app_id == app.app_id));
        Some(app)
    }

    /// Adds a credential to an app: `None` when there is no such app, else the credential or
    /// the rule it breaks (in the order Graph checks them: the count, the name, then issuer and
    /// subject).
    pub fn add_credential(
        &mut self,
        tenant: &str,
        key: AppKey,
        new: NewCredential,
        now: OffsetDateTime,
    ) -> Option<Result<FederatedCredential, CredentialError>> {
        let app = self.app_mut(tenant, key)?;
        let existing = &app.federated_identity_credentials;
        if existing.len() >= MAX_CREDENTIALS_PER_APP {
            return Some(Err(CredentialError::TooMany(existing.len())));
        }
        if existing
            .iter()
            .any(|c| c.name.eq_ignore_ascii_case(&new.name))
        {
            return Some(Err(CredentialError::DuplicateName(new.name)));
        }
        // Exact matching is the token endpoint's; uniqueness is held ignoring case, which
        // refuses whatever Entra might refuse.
        if existing.iter().any(|c| {
            c.issuer.eq_ignore_ascii_case(&new.issuer)
                && c.subject.eq_ignore_ascii_case(&new.subject)
        }) {
            return Some(Err(CredentialError::DuplicateIssuerSubject {
                issuer: new.issuer,
                subject: new.subject,
            }));
        }
        let credential = FederatedCredential {
            id: Uuid::new_v4().to_string(),
            name: new.name,
            issuer: new.issuer,
            subject: new.subject,
            audiences: new.audiences,
            description: new.description,
            created: now,
        };
        app.federated_identity_credentials.push(credential.clone());
        Some(Ok(credential))
    }

    /// Whether `id_or_name` names `c`: its id (as a GUID) or its name (ignoring case).
    fn names_credential(c: &FederatedCredential, id_or_name: &str) -> bool {
        Uuid::parse_str(id_or_name).is_ok_and(|g| same_guid(&c.id, &g))
            || c.name.eq_ignore_ascii_case(id_or_name)
    }

    pub fn credential(
        &self,
        tenant: &str,
        key: AppKey,
        id_or_name: &str,
    ) -> Option<&FederatedCredential> {
        self.app(tenant, key)?
            .federated_identity_credentials
            .iter()
            .find(|c| Self::names_credential(c, id_or_name))
    }

    /// Removes a credential at once: it stops matching assertions with the next request (the
    /// strictest reading of Entra's eventual consistency).
    pub fn delete_credential(
        &mut self,
        tenant: &str,
        key: AppKey,
        id_or_name: &str,
    ) -> Option<FederatedCredential> {
        let app = self.app_mut(tenant, key)?;
        let at = app
            .federated_identity_credentials
            .iter()
            .position(|c| Self::names_credential(c, id_or_name))?;
        Some(app.federated_identity_credentials.remove(at))
    }

    /// Makes the service principal of app `app_id` in `tenant`. `visible` says whether Graph's
    /// replica already sees an app made at a given time: right after an app is registered,
    /// creating its principal fails as if there were no app.
    pub fn create_principal(
        &mut self,
        tenant: &str,
        app_id: &Uuid,
        now: OffsetDateTime,
        visible: impl Fn(OffsetDateTime) -> bool,
    ) -> Result<ServicePrincipal, PrincipalError> {
        let app = self
            .app(tenant, AppKey::AppId(*app_id))
            .filter(|a| visible(a.created))
            .ok_or_else(|| PrincipalError::NoBackingApplication(app_id.to_string()))?;
        if self.principal_of_app(tenant, app_id).is_some() {
            return Err(PrincipalError::Exists(app_id.to_string()));
        }
        let principal = ServicePrincipal {
            tenant_id: tenant.to_owned(),
            id: Uuid::new_v4().to_string(),
            app_id: app.app_id.clone(),
            display_name: app.display_name.clone(),
            created: now,
        };
        self.principals.push(principal.clone());
        Ok(principal)
    }

    /// The service principals of `tenant`, in the order they were made.
    pub fn principals<'a>(
        &'a self,
        tenant: &'a str,
    ) -> impl Iterator<Item = &'a ServicePrincipal> + 'a {
        self.principals
            .iter()
            .filter(move |p| in_tenant(&p.tenant_id, tenant))
    }

    /// The principal of app `app_id` in `tenant`.
    pub fn principal_of_app(&self, tenant: &str, app_id: &Uuid) -> Option<&ServicePrincipal> {
        self.principals
            .iter()
            .find(|p| in_tenant(&p.tenant_id, tenant) && same_guid(&p.app_id, app_id))
    }

    /// The principal whose object id is `id` in `tenant`.
    pub fn principal(&self, tenant: &str, id: &Uuid) -> Option<&ServicePrincipal> {
        self.principals
            .iter()
            .find(|p| in_tenant(&p.tenant_id, tenant) && same_guid(&p.id, id))
    }

    /// Deletes a principal (its app stays, and can no longer get tokens in this directory).
    pub fn delete_principal(&mut self, tenant: &str, id: &Uuid) -> Option<ServicePrincipal> {
        let at = self
            .principals
            .iter()
            .position(|p| in_tenant(&p.tenant_id, tenant) && same_guid(&p.id, id))?;
        Some(self.principals.remove(at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T1: &str = "72f988bf-86f1-41af-91ab-2d7cd011db47";
    const T2: &str = "11111111-86f1-41af-91ab-2d7cd011db47";

    fn new_app(name: &str) -> NewApplication {
        NewApplication {
            display_name: name.into(),
            description: None,
            sign_in_audience: "AzureADMyOrg".into(),
        }
    }

    fn fic(name: &str, subject: &str) -> NewCredential {
        NewCredential {
            name: name.into(),
            issuer: "https://issuer.example/oidc".into(),
            subject: subject.into(),
            audiences: vec!["api://AzureADTokenExchange".into()],
            description: None,
        }
    }

    fn guid(s: &str) -> Uuid {
        Uuid::parse_str(s).expect("guid")
    }

    #[test]
    fn objects_are_seen_only_from_their_own_directory() {
        let mut d = Directory::default();
        let now = OffsetDateTime::now_utc();
        let app = d.create_app(T1, new_app("hypersaga"), now);
        let key = AppKey::AppId(guid(&app.app_id));
        assert!(d.app(T1, key).is_some());
        assert!(d.app(&T1.to_uppercase(), key).is_some());
        assert!(d.app(T2, key).is_none());
        assert_eq!(
            d.create_principal(T2, &guid(&app.app_id), now, |_| true),
            Err(PrincipalError::NoBackingApplication(app.app_id.clone()))
        );
        let sp = d
            .create_principal(T1, &guid(&app.app_id), now, |_| true)
            .expect("principal");
        assert!(d.principal(T1, &guid(&sp.id)).is_some());
        assert!(d.principal(T2, &guid(&sp.id)).is_none());
        assert_eq!(
            d.create_principal(T1, &guid(&app.app_id), now, |_| true),
            Err(PrincipalError::Exists(app.app_id.clone()))
        );
        // The app takes its principal with it.
        assert!(d.delete_app(T1, AppKey::ObjectId(guid(&app.id))).is_some());
        assert!(d.principal(T1, &guid(&sp.id)).is_none());
    }

    #[test]
    fn a_principal_needs_an_app_graph_already_sees() {
        let mut d = Directory::default();
        let now = OffsetDateTime::now_utc();
        let app = d.create_app(T1, new_app("new"), now);
        assert_eq!(
            d.create_principal(T1, &guid(&app.app_id), now, |_| false),
            Err(PrincipalError::NoBackingApplication(app.app_id.clone()))
        );
    }

    #[test]
    fn credentials_are_unique_by_name_and_by_issuer_and_subject_and_at_most_twenty() {
        let mut d = Directory::default();
        let now = OffsetDateTime::now_utc();
        let app = d.create_app(T1, new_app("hypersaga"), now);
        let key = AppKey::ObjectId(guid(&app.id));
        let add = |d: &mut Directory, c| d.add_credential(T1, key, c, now).expect("app");
        let first = add(&mut d, fic("acme", "hypersaga:tenant:acme")).expect("first");
        assert_eq!(
            add(&mut d, fic("ACME", "hypersaga:tenant:other")),
            Err(CredentialError::DuplicateName("ACME".into()))
        );
        assert!(matches!(
            add(&mut d, fic("again", "hypersaga:tenant:acme")),
            Err(CredentialError::DuplicateIssuerSubject { .. })
        ));
        for i in 1..MAX_CREDENTIALS_PER_APP {
            add(&mut d, fic(&format!("c{i}"), &format!("s{i}"))).expect("under the limit");
        }
        assert_eq!(
            add(&mut d, fic("c20", "s20")),
            Err(CredentialError::TooMany(20))
        );
        // By id or by name, and gone once deleted.
        assert!(d.credential(T1, key, &first.id).is_some());
        assert!(d.credential(T1, key, "Acme").is_some());
        assert!(d.delete_credential(T1, key, "acme").is_some());
        assert!(d.credential(T1, key, &first.id).is_none());
        assert!(
            d.add_credential(T1, AppKey::ObjectId(Uuid::new_v4()), fic("x", "y"), now)
                .is_none()
        );
    }
}
