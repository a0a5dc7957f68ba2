//! A table entity on Azurite (`TableClient::versioned`): the register model only (a table has
//! no lock), reached through a fault proxy in front of Azurite's Table service.

use azstore::Service;
use azstore::table::{TableClient, TableServiceClient, VersionedEntity};
use azstore::update::{Current, Versioned};
use azstore::{ETag, Result};
use futures_util::future::{BoxFuture, LocalBoxFuture};
use serde::{Deserialize, Serialize};

use super::{Backend, Family, Faults, HttpFaults, Prepared, Register, Site};
use crate::writer::{Reg, RegisterRun, client_options, via_proxies};

/// A table entity on Azurite.
pub struct Table;

impl Backend for Table {
    fn name(&self) -> &'static str {
        "table"
    }

    fn families(&self) -> &'static [Family] {
        &[Family::Register]
    }

    fn prepare<'a>(&'a self, resource: &'a str, _: Family) -> BoxFuture<'a, Box<dyn Prepared>> {
        Box::pin(async move {
            let table = TableServiceClient::new(&testkit::account())
                .expect("table client")
                .table(resource)
                .expect("table name");
            table.create().await.expect("create table");
            let faults = HttpFaults::start(
                &testkit::account(),
                Service::Table,
                &["", "GET", "PUT", "POST"],
            )
            .await;
            Box::new(Proxied(faults, table)) as Box<dyn Prepared>
        })
    }

    fn register<'a>(&'a self, site: Site<'a>, run: RegisterRun<'a>) -> LocalBoxFuture<'a, ()> {
        let account = testkit::account();
        let account = match site.address.parse::<u16>() {
            Ok(port) => via_proxies(&account, &[(Service::Table, port)]),
            Err(_) => account,
        };
        let table = TableServiceClient::with_options(&account, client_options())
            .expect("table client")
            .table(site.resource)
            .expect("table name");
        let entity = table
            .versioned::<TableReg>("register", "register")
            .expect("keys");
        run.with(TableRegister(entity, table))
    }
}

/// The proxy of one history (the writers are given its port) and the table to delete.
struct Proxied(HttpFaults, TableClient);

impl Prepared for Proxied {
    fn address(&self) -> String {
        self.0.port().to_string()
    }
    fn direct(&self) -> String {
        String::new()
    }
    fn faults(&self) -> Vec<&dyn Faults> {
        vec![&self.0]
    }
    fn cleanup(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {
            let _ = self.1.delete().await;
        })
    }
}

/// The register as a table entity (the keys travel with the value).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableReg {
    /// Partition key.
    #[serde(rename = "PartitionKey")]
    pub pk: String,
    /// Row key.
    #[serde(rename = "RowKey")]
    pub rk: String,
    /// Counter.
    pub n: i64,
    /// Writer of the value, -1 for none.
    pub by: i64,
    /// Ids of the increments applied, comma-separated.
    #[serde(default)]
    pub applied: String,
}

/// A table entity as a register (and its table, for the unconditional writes of the broken
/// variant).
struct TableRegister(VersionedEntity<TableReg>, TableClient);

impl Versioned for TableRegister {
    type Value = TableReg;
    async fn read(&self) -> Result<Option<Current<TableReg>>> {
        self.0.read().await
    }
    async fn replace(&self, value: &TableReg, etag: &ETag, write_id: &str) -> Result<ETag> {
        self.0.replace(value, etag, write_id).await
    }
    async fn create(&self, value: &TableReg, write_id: &str) -> Result<ETag> {
        self.0.create(value, write_id).await
    }
    async fn delete(&self, etag: &ETag) -> Result<()> {
        self.0.delete(etag).await
    }
    fn identity(&self) -> String {
        Versioned::identity(&self.0)
    }
    fn stores_write_ids(&self) -> bool {
        self.0.stores_write_ids()
    }
}

impl Register for TableRegister {
    fn make(&self, reg: Reg) -> TableReg {
        TableReg {
            pk: "register".into(),
            rk: "register".into(),
            n: reg.n as i64,
            by: reg.by.map_or(-1, |b| b as i64),
            applied: reg
                .applied
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(","),
        }
    }
    fn get(&self, v: &TableReg) -> Reg {
        Reg {
            n: v.n as u64,
            by: u64::try_from(v.by).ok(),
            applied: v.applied.split(',').filter_map(|x| x.parse().ok()).collect(),
        }
    }
    async fn overwrite_value(&self, value: &TableReg) -> Result<ETag> {
        self.1.insert_or_replace(value).await
    }
}
