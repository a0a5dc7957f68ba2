//! Safe `$filter` building and query options.

use std::fmt;

use super::edm::EdmValue;
use super::names::validate_property_name;
use crate::error::Result;

/// A `$filter` expression built from typed values, so a value can never break out of its
/// literal: strings are quoted with `'` doubled, `Int64` gets its `L` suffix, dates, GUIDs and
/// binaries get their OData prefixes. Property names are checked to be identifiers.
///
/// ```
/// use azstore::table::Filter;
/// let f = Filter::eq("PartitionKey", "customers")?
///     .and(Filter::eq("LastName", "O'Brien' or true or ''='")?)
///     .and(Filter::ge("Visits", 10i64)?);
/// assert_eq!(
///     f.as_str(),
///     "((PartitionKey eq 'customers') and (LastName eq 'O''Brien'' or true or ''''=''')) \
///      and (Visits ge 10L)"
/// );
/// # Ok::<(), azstore::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub struct Filter(String);

macro_rules! comparisons {
    ($($name:ident => $op:literal),*) => {$(
        #[doc = concat!("`property ", $op, " value`; the property name must be an identifier.")]
        ///
        /// ```
        /// use azstore::table::Filter;
        #[doc = concat!("let f = Filter::", stringify!($name), "(\"Visits\", 10)?;")]
        #[doc = concat!("assert_eq!(f.as_str(), \"Visits ", $op, " 10\");")]
        /// # Ok::<(), azstore::Error>(())
        /// ```
        pub fn $name(property: &str, value: impl Into<EdmValue>) -> Result<Filter> {
            Filter::compare(property, $op, value.into())
        }
    )*};
}

impl Filter {
    comparisons!(eq => "eq", ne => "ne", gt => "gt", ge => "ge", lt => "lt", le => "le");

    fn compare(property: &str, op: &str, value: EdmValue) -> Result<Filter> {
        validate_property_name(property)?;
        Ok(Filter(format!(
            "{property} {op} {}",
            value.filter_literal()
        )))
    }

    /// Both filters must hold.
    ///
    /// ```
    /// use azstore::table::Filter;
    /// let f = Filter::eq("PartitionKey", "eu")?.and(Filter::ge("Visits", 10_i64)?);
    /// assert_eq!(f.as_str(), "(PartitionKey eq 'eu') and (Visits ge 10L)");
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn and(self, other: Filter) -> Filter {
        Filter(format!("({}) and ({})", self.0, other.0))
    }

    /// Either filter must hold.
    ///
    /// ```
    /// use azstore::table::Filter;
    /// let f = Filter::eq("Status", "new")?.or(Filter::eq("Status", "retry")?);
    /// assert_eq!(f.as_str(), "(Status eq 'new') or (Status eq 'retry')");
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn or(self, other: Filter) -> Filter {
        Filter(format!("({}) or ({})", self.0, other.0))
    }

    /// A hand-written expression, sent as it is. Only for text you fully control: quote
    /// string values with [`quote`].
    ///
    /// ```
    /// use azstore::table::{Filter, quote};
    /// let name = "O'Brien";
    /// let f = Filter::raw(format!("LastName eq {}", quote(name)));
    /// assert_eq!(f.as_str(), "LastName eq 'O''Brien'");
    /// ```
    pub fn raw(expr: impl Into<String>) -> Filter {
        Filter(expr.into())
    }

    /// The expression.
    ///
    /// ```
    /// let f = azstore::table::Filter::eq("RowKey", "a")?;
    /// assert_eq!(f.as_str(), "RowKey eq 'a'");
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// `!filter`: the filter must not hold.
impl std::ops::Not for Filter {
    type Output = Filter;
    fn not(self) -> Filter {
        Filter(format!("not ({})", self.0))
    }
}

impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Quotes a string as an OData literal: `O'Brien` → `'O''Brien'`.
///
/// ```
/// assert_eq!(azstore::table::quote("O'Brien"), "'O''Brien'");
/// ```
pub fn quote(s: &str) -> String {
    EdmValue::String(s.to_string()).filter_literal()
}

/// Options of a query: filter, projection and page size.
///
/// ```no_run
/// # async fn demo(table: azstore::table::TableClient) -> azstore::Result<()> {
/// use futures_util::TryStreamExt;
/// use azstore::table::{Entity, Filter, Query};
/// let q = Query::filter(Filter::eq("PartitionKey", "smith")?).select(["RowKey", "Email"]).top(100);
/// let rows: Vec<_> = table.query::<Entity>(q).try_collect().await?;
/// # let _ = rows; Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct Query {
    pub(crate) filter: Option<Filter>,
    pub(crate) select: Option<Vec<String>>,
    pub(crate) top: Option<u32>,
}

impl Query {
    /// Every entity (or table).
    ///
    /// ```
    /// use azstore::table::Query;
    /// let everything_in_pages_of_500 = Query::all().top(500);
    /// # let _ = everything_in_pages_of_500;
    /// ```
    pub fn all() -> Query {
        Query::default()
    }

    /// Only what matches `filter`.
    ///
    /// ```
    /// use azstore::table::{Filter, Query};
    /// let q = Query::filter(Filter::eq("PartitionKey", "customers")?);
    /// # let _ = q;
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn filter(filter: Filter) -> Query {
        Query {
            filter: Some(filter),
            ..Query::default()
        }
    }

    /// Returns only the entities (or tables) that match `filter` (`$filter`), replacing
    /// any filter set before. Default: every entity.
    ///
    /// ```
    /// use azstore::table::{Filter, Query};
    /// let recent = Query::all().top(100).with_filter(Filter::ge("Year", 2025)?);
    /// # let _ = recent; Ok::<(), azstore::Error>(())
    /// ```
    pub fn with_filter(mut self, v: Filter) -> Self {
        self.filter = Some(v);
        self
    }

    /// Returns only these properties (`$select`). Include `PartitionKey`/`RowKey` if the
    /// target type needs them. Names are checked when the query is sent.
    ///
    /// ```
    /// use azstore::table::Query;
    /// // Only the keys and the e-mail address of each entity.
    /// let q = Query::all().select(["PartitionKey", "RowKey", "Email"]);
    /// # let _ = q;
    /// ```
    pub fn select<S: Into<String>>(mut self, properties: impl IntoIterator<Item = S>) -> Query {
        self.select = Some(properties.into_iter().map(Into::into).collect());
        self
    }

    /// The page size (`$top`, 1–1000): each request returns at most this many entities, and
    /// the stream follows continuation tokens for the rest. Use `StreamExt::take` to limit the
    /// total. Default: not sent (the service's 1000).
    ///
    /// ```
    /// let small_pages = azstore::table::Query::all().top(50);
    /// # let _ = small_pages;
    /// ```
    pub fn top(mut self, v: u32) -> Self {
        self.top = Some(v);
        self
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if let Some(sel) = &self.select {
            for s in sel {
                validate_property_name(s)?;
            }
        }
        if let Some(t) = self.top {
            if !(1..=1000).contains(&t) {
                return Err(crate::error::Error::invalid_input(format!(
                    "$top must be 1-1000, not {t}"
                )));
            }
        }
        Ok(())
    }

    pub(crate) fn params(&self) -> Vec<(&'static str, String)> {
        let mut p = Vec::new();
        if let Some(f) = &self.filter {
            p.push(("$filter", f.0.clone()));
        }
        if let Some(s) = &self.select {
            p.push(("$select", s.join(",")));
        }
        if let Some(t) = self.top {
            p.push(("$top", t.to_string()));
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn injection_is_impossible() {
        let f = Filter::eq("Name", "x' or 'a' eq 'a").unwrap();
        assert_eq!(f.as_str(), "Name eq 'x'' or ''a'' eq ''a'");
        assert!(Filter::eq("Name or true", "x").is_err());
        assert_eq!(quote("it's"), "'it''s'");
        assert!(Query::all().top(0).validate().is_err());
        assert!(Query::all().select(["a b"]).validate().is_err());
    }
}
