//! [`ErrorCode`]: the error codes the services answer with, parsed once, with the groups
//! azstore asks about (lease lost, ...).

use std::fmt;

use super::ErrorKind;

macro_rules! error_codes {
    ($( $(#[$doc:meta])* $name:ident ),* $(,)?) => {
        /// A service error code, as sent in `x-ms-error-code`, an XML `<Error><Code>` or a Table
        /// JSON `odata.error.code`. Known codes are variants so they can be matched without
        /// string comparison; anything else is kept in [`ErrorCode::Other`].
        ///
        /// ```
        /// use azstore::ErrorCode;
        /// assert_eq!(ErrorCode::parse("BlobAlreadyExists"), ErrorCode::BlobAlreadyExists);
        /// assert_eq!(ErrorCode::parse("SomethingNew"), ErrorCode::Other("SomethingNew".into()));
        /// ```
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ErrorCode {
            $( $(#[$doc])* #[allow(missing_docs)] $name, )*
            /// A code azstore has no variant for.
            Other(String),
        }

        impl ErrorCode {
            /// Parses a service error code.
            ///
            /// ```
            /// use azstore::ErrorCode;
            /// assert_eq!(ErrorCode::parse("ConditionNotMet"), ErrorCode::ConditionNotMet);
            /// ```
            pub fn parse(code: &str) -> ErrorCode {
                match code {
                    $( stringify!($name) => ErrorCode::$name, )*
                    other => ErrorCode::Other(other.to_string()),
                }
            }

            /// The code as the service spells it.
            ///
            /// ```
            /// assert_eq!(azstore::ErrorCode::LeaseIdMissing.as_str(), "LeaseIdMissing");
            /// ```
            pub fn as_str(&self) -> &str {
                match self {
                    $( ErrorCode::$name => stringify!($name), )*
                    ErrorCode::Other(s) => s,
                }
            }
        }
    };
}

error_codes! {
    // Conditions
    ConditionNotMet, SourceConditionNotMet, TargetConditionNotMet, UpdateConditionNotSatisfied,
    AppendPositionConditionNotMet, MaxBlobSizeConditionNotMet, SequenceNumberConditionNotMet,
    ConditionHeadersNotSupported, MultipleConditionHeadersNotSupported,
    // Existence
    BlobAlreadyExists, ContainerAlreadyExists, EntityAlreadyExists, TableAlreadyExists,
    QueueAlreadyExists, ShareAlreadyExists, ResourceAlreadyExists,
    BlobNotFound, ContainerNotFound, ResourceNotFound, TableNotFound, QueueNotFound,
    ShareNotFound, ParentNotFound, MessageNotFound, CannotVerifyCopySource,
    ContainerBeingDeleted, QueueBeingDeleted, ShareBeingDeleted, TableBeingDeleted,
    // Leases
    LeaseAlreadyPresent, LeaseAlreadyBroken, LeaseIdMissing, LeaseIdMismatchWithBlobOperation,
    LeaseIdMismatchWithContainerOperation, LeaseIdMismatchWithLeaseOperation,
    LeaseIdMismatchWithFileOperation, LeaseIdMismatchWithShareOperation,
    LeaseIsBreakingAndCannotBeAcquired, LeaseIsBreakingAndCannotBeChanged,
    LeaseIsBrokenAndCannotBeRenewed, LeaseLost, LeaseNotPresentWithBlobOperation,
    LeaseNotPresentWithContainerOperation, LeaseNotPresentWithLeaseOperation,
    LeaseNotPresentWithFileOperation, LeaseNotPresentWithShareOperation,
    InfiniteLeaseDurationRequired,
    // Queue
    PopReceiptMismatch, MessageTooLarge, QueueNotEmpty,
    // File / SMB
    SharingViolation, DeletePending, SMBDeletePending, FileLockConflict, DirectoryNotEmpty, ShareHasSnapshots,
    // Copy
    PendingCopyOperation, NoPendingCopyOperation, CopyIdMismatch,
    // Table
    InvalidInput, InvalidDuplicateRow, PropertiesNeedValue, EntityTooLarge, OutOfRangeInput,
    CommandsInBatchActOnDifferentPartitions, InvalidValueType, JsonFormatNotSupported,
    // Blocks, pages, append
    InvalidBlockList, InvalidBlockId, InvalidPageRange, BlockCountExceedsLimit,
    // Auth
    AuthenticationFailed, AuthorizationFailure, AuthorizationPermissionMismatch,
    InsufficientAccountPermissions,
    // Generic
    InvalidHeaderValue, InvalidQueryParameterValue, InvalidRangeNotSatisfiable, InvalidRange,
    InvalidResourceName, InvalidUri, MissingRequiredHeader, OperationTimedOut, ServerBusy,
    InternalError, InvalidXmlDocument, InvalidOperation, RequestBodyTooLarge,
    UnsupportedHeader, Md5Mismatch, InvalidMd5, OutOfRangeQueryParameterValue,
    // Integrity, lifecycle
    Crc64Mismatch, BlobIsSealed, BlobArchived, BlobBeingRehydrated,
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ErrorCode {
    /// Whether this code is about a lease (held by someone else, missing, mismatched, lost).
    ///
    /// ```
    /// use azstore::ErrorCode;
    /// assert!(ErrorCode::LeaseAlreadyPresent.is_lease_code());
    /// assert!(!ErrorCode::ConditionNotMet.is_lease_code());
    /// ```
    pub fn is_lease_code(&self) -> bool {
        use ErrorCode::*;
        self.means_lease_lost()
            || matches!(
                self,
                LeaseAlreadyPresent
                    | LeaseIdMissing
                    | LeaseIsBreakingAndCannotBeAcquired
                    | InfiniteLeaseDurationRequired
            )
    }

    /// What this code means in the toolkit's words, for a response of `status`; `None` when
    /// the status alone says it (404 → [`ErrorKind::NotFound`], 409 → [`ErrorKind::Conflict`],
    /// …). This is the one place Azure Storage's codes become [`ErrorKind`]s.
    ///
    /// ```
    /// use azstore::{ErrorCode, ErrorKind};
    /// assert_eq!(ErrorCode::EntityAlreadyExists.kind(409), Some(ErrorKind::AlreadyExists));
    /// assert_eq!(ErrorCode::QueueNotFound.kind(404), Some(ErrorKind::ContainerNotFound));
    /// assert_eq!(ErrorCode::LeaseAlreadyPresent.kind(409), Some(ErrorKind::LeaseHeld));
    /// assert_eq!(ErrorCode::LeaseLost.kind(412), Some(ErrorKind::LeaseLost));
    /// assert_eq!(ErrorCode::ConditionNotMet.kind(412), None);
    /// ```
    pub fn kind(&self, status: u16) -> Option<ErrorKind> {
        use ErrorCode::*;
        match (self, status) {
            (Md5Mismatch | Crc64Mismatch, _) => Some(ErrorKind::Integrity),
            (c, 400 | 409 | 412) if c.means_lease_lost() => Some(ErrorKind::LeaseLost),
            (
                LeaseAlreadyPresent | LeaseIdMissing | LeaseIsBreakingAndCannotBeAcquired,
                400 | 409 | 412,
            ) => Some(ErrorKind::LeaseHeld),
            (
                BlobAlreadyExists
                | ContainerAlreadyExists
                | EntityAlreadyExists
                | TableAlreadyExists
                | QueueAlreadyExists
                | ShareAlreadyExists
                | ResourceAlreadyExists,
                409,
            ) => Some(ErrorKind::AlreadyExists),
            (
                ContainerNotFound | TableNotFound | QueueNotFound | ShareNotFound | ParentNotFound,
                404,
            ) => Some(ErrorKind::ContainerNotFound),
            _ => None,
        }
    }

    /// Whether this code says a lease the caller believed it held is no longer valid.
    ///
    /// ```
    /// use azstore::ErrorCode;
    /// // Someone else holds it now: lost. Someone else held it before we asked: not "lost".
    /// assert!(ErrorCode::LeaseIdMismatchWithBlobOperation.means_lease_lost());
    /// assert!(!ErrorCode::LeaseAlreadyPresent.means_lease_lost());
    /// ```
    pub fn means_lease_lost(&self) -> bool {
        use ErrorCode::*;
        matches!(
            self,
            LeaseLost
                | LeaseIdMismatchWithBlobOperation
                | LeaseIdMismatchWithContainerOperation
                | LeaseIdMismatchWithLeaseOperation
                | LeaseIdMismatchWithFileOperation
                | LeaseIdMismatchWithShareOperation
                | LeaseNotPresentWithBlobOperation
                | LeaseNotPresentWithContainerOperation
                | LeaseNotPresentWithLeaseOperation
                | LeaseNotPresentWithFileOperation
                | LeaseNotPresentWithShareOperation
                | LeaseIsBrokenAndCannotBeRenewed
                | LeaseIsBreakingAndCannotBeChanged
                | LeaseAlreadyBroken
        )
    }
}
