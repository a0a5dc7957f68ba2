"""Cross-check of azstore's File test server with the official Python SDK.

Runs the same operations azstore's tests use through `azure-storage-file-share`: create a
share and a directory, upload and download a multi-range file, list, acquire a file lease,
see a write without the lease id refused with 412, write with it, break the lease and
acquire again, and a share lease with renew. Any failure raises, so the exit code is non-zero.

Then it reads what azstore wrote (share INTEROP_SHARE: `from-rust.bin`, leased by azstore,
with the SHA-256 given) and writes `from-python.txt` there for azstore to read back.

Usage: python file_sdk_check.py CONNECTION_STRING SHARE_NAME INTEROP_SHARE RUST_SHA256
"""

import hashlib
import os
import sys

from azure.core.exceptions import HttpResponseError, ResourceExistsError
from azure.storage.fileshare import ShareServiceClient


def expect_error(fn, status, code):
    try:
        fn()
    except HttpResponseError as e:
        assert e.status_code == status, f"expected {status}, got {e.status_code} ({e.error_code})"
        assert e.error_code == code, f"expected {code}, got {e.error_code}"
        return e
    raise AssertionError(f"expected {status} {code}, the call succeeded")


def main():
    conn, share_name = sys.argv[1], sys.argv[2]
    service = ShareServiceClient.from_connection_string(conn)
    share = service.get_share_client(share_name)
    share.create_share(metadata={"origin": "python"})
    expect_error(share.create_share, 409, "ShareAlreadyExists")
    props = share.get_share_properties()
    assert props.metadata == {"origin": "python"}, props.metadata

    directory = share.get_directory_client("reports")
    directory.create_directory()
    sub = directory.get_subdirectory_client("2026")
    sub.create_directory()

    # 9 MiB + 5 bytes: the SDK splits it into 4 MiB ranges.
    data = os.urandom(9 * 1024 * 1024 + 5)
    f = directory.get_file_client("big.bin")
    f.upload_file(data)
    got = f.download_file().readall()
    assert got == data, "downloaded content differs"
    part = f.download_file(offset=1000, length=10).readall()
    assert part == data[1000:1010], "ranged download differs"
    fprops = f.get_file_properties()
    assert fprops.size == len(data), fprops.size

    small = directory.get_file_client("small.txt")
    small.upload_file(b"hello world")
    names = sorted(i["name"] for i in directory.list_directories_and_files())
    assert names == ["2026", "big.bin", "small.txt"], names
    paged = list(directory.list_directories_and_files(results_per_page=1).by_page())
    assert len(paged) == 3, f"expected 3 pages, got {len(paged)}"

    ranges = small.get_ranges()
    assert ranges == [{"start": 0, "end": 10}], ranges

    # Clear a range (the SDK wants 512-byte alignment) and resize.
    sparse = directory.get_file_client("sparse.bin")
    sparse.create_file(1024)
    sparse.upload_range(b"x" * 1024, offset=0, length=1024)
    sparse.clear_range(offset=0, length=512)
    assert sparse.get_ranges() == [{"start": 512, "end": 1023}], sparse.get_ranges()
    assert sparse.download_file().readall() == b"\0" * 512 + b"x" * 512
    sparse.resize_file(600)
    assert sparse.get_file_properties().size == 600
    sparse.delete_file()

    # File lease: infinite only; writes need the lease id.
    lease = small.acquire_lease()
    assert lease.id
    lp = small.get_file_properties().lease
    assert (lp.state, lp.status, lp.duration) == ("leased", "locked", "infinite"), lp
    expect_error(lambda: small.upload_range(b"HELLO", offset=0, length=5), 412, "LeaseIdMissing")
    other = "00000000-0000-0000-0000-000000000001"
    expect_error(
        lambda: small.upload_range(b"HELLO", offset=0, length=5, lease=other),
        412,
        "LeaseIdMismatchWithFileOperation",
    )
    small.upload_range(b"HELLO", offset=0, length=5, lease=lease)
    assert small.download_file().readall() == b"HELLO world"
    lease.break_lease()
    # After the break, writes without a lease id go through and the file can be leased again.
    small.upload_range(b"h", offset=0, length=1)
    lease2 = small.acquire_lease()
    lease2.release()
    assert small.download_file().readall() == b"hELLO world"

    # Share lease: 15-60 s or infinite, renewable; deleting the share needs the lease id.
    slease = share.acquire_lease(lease_duration=15)
    slease.renew()
    sp = share.get_share_properties().lease
    assert (sp.state, sp.status, sp.duration) == ("leased", "locked", "fixed"), sp
    expect_error(share.delete_share, 412, "LeaseIdMissing")
    slease.release()

    # A wrong key is refused by the server's SharedKey check.
    bad = conn.replace("AccountKey=", "AccountKey=AAAA")
    bad_share = ShareServiceClient.from_connection_string(bad).get_share_client(share_name)
    expect_error(bad_share.get_share_properties, 403, "AuthenticationFailed")

    small.delete_file()

    # Share permissions, SMB properties, share properties, Copy File, List Shares include.
    import datetime
    from azure.storage.fileshare import ContentSettings, NTFSAttributes
    sddl = "O:BAG:SYD:(A;;FA;;;BA)"
    key = share.create_permission_for_share(sddl)
    assert share.get_permission_for_share(key) == sddl
    smb = share.get_file_client("smb.txt")
    created = datetime.datetime(2019, 7, 11, 21, 40, 12, 995301, tzinfo=datetime.timezone.utc)
    smb.create_file(
        4,
        file_attributes=NTFSAttributes(read_only=True, archive=True),
        file_creation_time=created,
        permission_key=key,
    )
    sp = smb.get_file_properties()
    assert sp.permission_key == key, sp.permission_key
    assert "ReadOnly" in sp.file_attributes and "Archive" in sp.file_attributes, sp.file_attributes
    assert sp.creation_time.replace(tzinfo=datetime.timezone.utc) == created, sp.creation_time
    smb.set_http_headers(ContentSettings(content_language="fr"), file_attributes="None")
    sp = smb.get_file_properties()
    assert sp.file_attributes in ("None", ""), sp.file_attributes
    assert sp.creation_time.replace(tzinfo=datetime.timezone.utc) == created, "preserved"
    assert sp.content_settings.content_language == "fr"
    share.set_share_properties(access_tier="Cool", quota=3)
    props = share.get_share_properties()
    assert (props.quota, props.access_tier) == (3, "Cool"), (props.quota, props.access_tier)
    copy = share.get_file_client("copy.txt")
    started = copy.start_copy_from_url(smb.url)
    assert started["copy_status"] == "success", started
    cp = copy.get_file_properties()
    assert cp.copy.status == "success" and cp.copy.id == started["copy_id"], cp.copy
    expect_error(lambda: copy.abort_copy(started["copy_id"]), 409, "NoPendingCopyOperation")
    snap = share.create_snapshot()
    listed = [
        (s.name, s.snapshot)
        for s in service.list_shares(name_starts_with=share_name, include_snapshots=True)
    ]
    assert listed == [(share_name, snap["snapshot"]), (share_name, None)], listed
    share.delete_share(delete_snapshots=True)

    # Interop with azstore: read its upload (leased by azstore: reads stay open, writes not).
    interop = service.get_share_client(sys.argv[3])
    from_rust = interop.get_file_client("from-rust.bin")
    content = from_rust.download_file().readall()
    assert hashlib.sha256(content).hexdigest() == sys.argv[4], "azstore's upload reads differently"
    assert from_rust.get_file_properties().lease.state == "leased"
    expect_error(lambda: from_rust.upload_range(b"x", offset=0, length=1), 412, "LeaseIdMissing")
    interop.get_file_client("from-python.txt").upload_file(b"written by azure-storage-file-share")
    print("python file-share SDK check: OK")


if __name__ == "__main__":
    main()
