"""Checks every Terraform module under terraform/ without a terraform binary.

1. Every .tf file must parse with python-hcl2 (a parse error fails).
2. Module rules that checkov has no checks for (Vault), and stateseal's own
   invariants for every module: the KEK can never be exported or deleted by
   accident, the servers' permissions are exactly the ones stateseal uses.
Prints one line per check; exits 1 if any fails. checkov runs separately.
"""

import pathlib
import sys

import hcl2

ROOT = pathlib.Path(__file__).resolve().parent.parent / "terraform"
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def load(module):
    merged = {}
    for tf in sorted((ROOT / module).glob("*.tf")):
        try:
            with tf.open() as f:
                doc = hcl2.load(f)
        except Exception as e:  # noqa: BLE001 - any parse failure fails the check
            check(False, f"{tf.relative_to(ROOT)} parses: {e}")
            continue
        check(True, f"{tf.relative_to(ROOT)} parses")
        for kind, items in doc.items():
            merged.setdefault(kind, []).extend(items)
    return merged


def resources(doc, rtype):
    out = {}
    for block in doc.get("resource", []):
        for t, named in block.items():
            if t.strip('"') == rtype:
                for name, body in named.items():
                    out[name.strip('"')] = body
    return out


def data_sources(doc, dtype):
    out = {}
    for block in doc.get("data", []):
        for t, named in block.items():
            if t.strip('"') == dtype:
                for name, body in named.items():
                    out[name.strip('"')] = body
    return out


def value(v):
    if isinstance(v, str):
        return v.strip('"')
    return v


def prevent_destroy(body):
    for lc in body.get("lifecycle", []):
        if value(lc.get("prevent_destroy")) is True:
            return True
    return False


def check_vault(doc):
    keys = resources(doc, "vault_transit_secret_backend_key")
    check(len(keys) == 1, "vault: one transit key")
    for name, k in keys.items():
        check(value(k.get("derived")) is True, f"vault: transit key {name} is derived (binding)")
        check(value(k.get("exportable")) is False, f"vault: transit key {name} is not exportable")
        check(value(k.get("allow_plaintext_backup")) is False, f"vault: {name} has no plaintext backup")
        check(value(k.get("deletion_allowed")) is False, f"vault: {name} cannot be deleted")
        check(prevent_destroy(k), f"vault: {name} has prevent_destroy")
    kv = resources(doc, "vault_kv_secret_backend_v2")
    check(any(value(b.get("cas_required")) is True for b in kv.values()), "vault: KV v2 requires check-and-set")
    policies = data_sources(doc, "vault_policy_document")
    allowed = {"update", "create", "read"}
    for name, p in policies.items():
        rules = p.get("rule", [])
        caps = [set(value(c) for c in r.get("capabilities", [])) for r in rules]
        paths = [value(r.get("path")) for r in rules]
        check(all(c <= allowed for c in caps), f"vault: policy {name} grants only {sorted(allowed)}")
        check(not any("*" in p or "+" in p for p in paths), f"vault: policy {name} has no wildcard paths")
        kinds = sorted(p.split("/", 1)[1].split("/", 1)[0] for p in paths if "/" in p)
        data = sorted(p for p in paths if p.split("/", 2)[1:2] == ["data"])
        if name == "server":
            check(
                kinds == ["data", "decrypt", "metadata"],
                f"vault: policy server covers exactly decrypt, the keyset and its metadata ({kinds})",
            )
            kv_caps = [c for c, p in zip(caps, paths) if p.split("/", 2)[1:2] in (["data"], ["metadata"])]
            check(kv_caps == [{"read"}, {"read"}], f"vault: policy server only reads the keyset ({kv_caps})")
            meta = [p for p in paths if p.split("/", 2)[1:2] == ["metadata"]]
            check(
                [m.replace("/metadata/", "/data/", 1) for m in meta] == data,
                f"vault: the server's metadata path is the keyset's ({meta})",
            )
        else:
            check(
                kinds == ["data", "data", "datakey", "decrypt"],
                f"vault: policy {name} covers exactly datakey, decrypt, the keyset and its newest copy",
            )
            check(
                len(data) == 2 and data[1] == data[0] + ".newest",
                f"vault: policy {name}'s KV paths are the keyset and its .newest copy ({data})",
            )
    check(set(policies) == {"server", "rotator"}, f"vault: a server and a rotator policy ({sorted(policies)})")
    for rtype in ("vault_approle_auth_backend_role", "vault_kubernetes_auth_backend_role"):
        for name, r in resources(doc, rtype).items():
            check("token_max_ttl" in r, f"vault: {rtype}.{name} bounds token lifetime")


def check_aws(doc):
    keys = resources(doc, "aws_kms_key")
    check(len(keys) == 1, "aws: one KMS key")
    for name, k in keys.items():
        check(value(k.get("enable_key_rotation")) is True, f"aws: key {name} rotates")
        check(value(k.get("key_usage")) == "ENCRYPT_DECRYPT", f"aws: key {name} is symmetric ENCRYPT_DECRYPT")
        check("policy" in k, f"aws: key {name} has an explicit key policy")
        check(prevent_destroy(k), f"aws: key {name} has prevent_destroy")
    documents = data_sources(doc, "aws_iam_policy_document")
    expected = {
        "server": ["kms:Decrypt", "s3:GetObject"],
        "rotator": ["kms:Decrypt", "kms:GenerateDataKey", "s3:GetObject", "s3:PutObject"],
    }
    for name, want in expected.items():
        statements = documents.get(name, {}).get("statement", [])
        actions = sorted(value(a) for st in statements for a in st.get("actions", []))
        check(actions == want, f"aws: {name} policy grants exactly {want} ({actions})")
        kms_st = [st for st in statements if any(value(a).startswith("kms:") for a in st.get("actions", []))]
        check(
            bool(kms_st) and all(
                any(value(c.get("variable")) == "kms:EncryptionContextKeys" for c in st.get("condition", []))
                for st in kms_st
            ),
            f"aws: {name} KMS use requires stateseal's encryption context",
        )
        check(
            all("*" not in str(st.get("resources")) for st in statements),
            f"aws: {name} policy names its resources (no wildcard)",
        )
    versioning = resources(doc, "aws_s3_bucket_versioning")
    check(
        any(value(v["versioning_configuration"][0].get("status")) == "Enabled" for v in versioning.values()),
        "aws: keyset bucket is versioned",
    )
    pab = resources(doc, "aws_s3_bucket_public_access_block")
    flags = ["block_public_acls", "block_public_policy", "ignore_public_acls", "restrict_public_buckets"]
    check(
        any(all(value(b.get(f)) is True for f in flags) for b in pab.values()),
        "aws: keyset bucket blocks all public access",
    )


def check_gcp(doc):
    keys = resources(doc, "google_kms_crypto_key")
    check(len(keys) == 1, "gcp: one crypto key")
    for name, k in keys.items():
        check(value(k.get("purpose")) == "ENCRYPT_DECRYPT", f"gcp: key {name} is ENCRYPT_DECRYPT")
        check("rotation_period" in k, f"gcp: key {name} has a rotation period")
        tmpl = (k.get("version_template") or [{}])[0]
        check("protection_level" in tmpl, f"gcp: key {name} sets its protection level")
        check(prevent_destroy(k), f"gcp: key {name} has prevent_destroy")
    members = resources(doc, "google_kms_crypto_key_iam_member")
    roles = {n: value(m.get("role")) for n, m in members.items()}
    check(
        roles == {
            "servers": "roles/cloudkms.cryptoKeyDecrypter",
            "servers_wrap": "roles/cloudkms.cryptoKeyEncrypterDecrypter",
            "rotator": "roles/cloudkms.cryptoKeyEncrypterDecrypter",
        },
        f"gcp: servers decrypt; wrapping only for servers that write, and for the rotator ({roles})",
    )
    check(
        all("crypto_key_id" in m and "serviceAccount:" in value(m.get("member", "")) for m in members.values()),
        "gcp: the binding is on the key, to the servers' service account",
    )
    wider = [t for t in ("google_project_iam_member", "google_project_iam_binding", "google_kms_key_ring_iam_member",
                         "google_kms_key_ring_iam_binding", "google_storage_bucket_iam_binding",
                         "google_storage_bucket_iam_policy") if resources(doc, t)]
    check(not wider, f"gcp: no project-, ring- or bucket-wide grants ({wider})")
    buckets = resources(doc, "google_storage_bucket")
    check(len(buckets) == 1, "gcp: one keyset bucket")
    for name, b in buckets.items():
        check(value(b.get("uniform_bucket_level_access")) is True, f"gcp: bucket {name} has uniform bucket-level access")
        check(value(b.get("public_access_prevention")) == "enforced", f"gcp: bucket {name} enforces public access prevention")
        check(
            any(value(v.get("enabled")) is True for v in b.get("versioning", [])),
            f"gcp: bucket {name} is versioned",
        )
        check(
            bool(b.get("soft_delete_policy")) or bool(b.get("retention_policy")),
            f"gcp: bucket {name} has a soft-delete or retention policy",
        )
        check(value(b.get("force_destroy")) is False, f"gcp: bucket {name} is not force-destroyed")
        check(prevent_destroy(b), f"gcp: bucket {name} has prevent_destroy")
    roles = {n: sorted(value(p) for p in r.get("permissions", []))
             for n, r in resources(doc, "google_project_iam_custom_role").items()}
    check(
        sorted(roles.values()) == [
            ["storage.objects.create", "storage.objects.delete", "storage.objects.get"],
            ["storage.objects.get"],
        ],
        f"gcp: custom roles are exactly read, and read + create + replace, of objects ({roles})",
    )
    grants = resources(doc, "google_storage_bucket_iam_member")
    check({"servers", "operators"} <= set(grants), "gcp: the servers and the operators have bucket grants")
    for name, g in grants.items():
        conditions = g.get("condition", [])
        expression = value(conditions[0].get("expression", "")) if len(conditions) == 1 else ""
        check(
            expression.count("resource.name ==") == 2 and ".newest" in expression,
            f"gcp: bucket grant {name} is conditioned on the keyset object and its newest copy",
        )
        check("custom_role" in str(g.get("role")), f"gcp: bucket grant {name} uses a stateseal custom role")


RULES = {"vault": check_vault, "aws-kms": check_aws, "gcp-kms": check_gcp}

modules = sorted(p.name for p in ROOT.iterdir() if p.is_dir())
check(bool(modules), "terraform/ has modules")
for module in modules:
    doc = load(module)
    check("output" in doc, f"{module}: has outputs")
    outputs = {k for block in doc.get("output", []) for k in block}
    names = {o.strip('"') for o in outputs}
    check("kek_uri" in names, f"{module}: outputs kek_uri")
    if module in ("vault", "aws-kms", "gcp-kms"):
        check("store_uri" in names, f"{module}: outputs store_uri")
    if module in RULES:
        RULES[module](doc)

if failures:
    print(f"{len(failures)} terraform check(s) failed", file=sys.stderr)
    sys.exit(1)
print("terraform checks passed")
