"""Checks every Terraform module under terraform/ without a terraform binary.

1. Every .tf file must parse with python-hcl2 (a parse error fails).
2. Module rules that checkov has no checks for (Vault), and stateseal's own
   invariants for every module: the KEK can never be exported or deleted by
   accident, the servers' permissions are exactly the ones stateseal uses.
Prints one line per check; exits 1 if any fails. checkov runs separately.
"""

import pathlib
import re
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
                kinds == ["data", "data", "decrypt", "metadata"],
                f"vault: policy server covers exactly decrypt, the keyset, its newest copy and its metadata ({kinds})",
            )
            kv_caps = [c for c, p in zip(caps, paths) if p.split("/", 2)[1:2] in (["data"], ["metadata"])]
            check(kv_caps == [{"read"}] * 3, f"vault: policy server only reads the keyset ({kv_caps})")
            check(
                len(data) == 2 and data[1] == data[0] + ".newest",
                f"vault: the server reads the keyset and its .newest copy, a restarted server's floor ({data})",
            )
            meta = [p for p in paths if p.split("/", 2)[1:2] == ["metadata"]]
            check(
                [m.replace("/metadata/", "/data/", 1) for m in meta] == data[:1],
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
    server_s3 = [st for st in documents.get("server", {}).get("statement", [])
                 if any(value(a).startswith("s3:") for a in st.get("actions", []))]
    check(
        any("newest_arn" in str(st.get("resources")) for st in server_s3),
        "aws: servers read the keyset's newest copy too (a restarted server's floor)",
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


def local_values(doc):
    return {k: value(v) for block in doc.get("locals", []) for k, v in block.items() if not k.startswith("__")}


def resolve(text, locals_):
    """Expands ${local.NAME} references (the conditions are built from locals)."""
    text = value(text)
    for _ in range(10):
        expanded = text
        for k, v in locals_.items():
            if isinstance(v, str):
                expanded = expanded.replace("${local." + k + "}", v)
        if expanded == text:
            break
        text = expanded
    return text


def branches(expr):
    """`${c ? a : b}` -> [a, b] as `${a}`, `${b}`; anything else -> [itself]."""
    expr = value(expr)
    m = re.fullmatch(r"\$\{[^?]+\?\s*(\S+)\s*:\s*(\S+)\s*\}", expr)
    return ["${" + b + "}" for b in m.groups()] if m else [expr]


def role_name(ref):
    m = re.search(r"azurerm_role_definition\.(\w+)\.", ref)
    return m.group(1) if m else None


def check_azure(doc):
    hsm = "Microsoft.KeyVault/managedHsm/keys/"
    blob = "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/"
    locals_ = local_values(doc)
    keys = resources(doc, "azurerm_key_vault_managed_hardware_security_module_key")
    check(len(keys) == 1, "azure: one Managed HSM key")
    for name, k in keys.items():
        check(value(k.get("key_type")) == "oct-HSM" and value(k.get("key_size")) == 256,
              f"azure: key {name} is an HSM AES-256 key (oct-HSM, 256)")
        opts = sorted(value(o) for o in k.get("key_opts", []))
        check(opts == ["decrypt", "encrypt"], f"azure: key {name} only encrypts and decrypts ({opts})")
        check(prevent_destroy(k), f"azure: key {name} has prevent_destroy")
    policies = resources(doc, "azurerm_key_vault_managed_hardware_security_module_key_rotation_policy")
    check(len(policies) == 1 and all("time_after_creation" in p for p in policies.values()),
          "azure: the key has a rotation policy that rotates by age")

    # HSM roles: custom, data actions only, decrypt for the servers; on the key alone.
    definitions = {n: sorted(value(a) for p in d.get("permission", []) for a in p.get("data_actions", []))
                   for n, d in resources(doc, "azurerm_key_vault_managed_hardware_security_module_role_definition").items()}
    wrap = [hsm + "decrypt/action", hsm + "encrypt/action", hsm + "read/action"]
    check(sorted(definitions.values()) == [[hsm + "decrypt/action"], wrap],
          f"azure: HSM roles are exactly decrypt, and decrypt + encrypt + read of the key ({definitions})")
    check(all(not p.get("actions") for d in resources(doc, "azurerm_key_vault_managed_hardware_security_module_role_definition").values()
              for p in d.get("permission", [])), "azure: HSM roles grant no control-plane actions")
    assignments = resources(doc, "azurerm_key_vault_managed_hardware_security_module_role_assignment")
    granted = {}
    for name, a in assignments.items():
        ref = value(a.get("role_definition_id", ""))
        granted[name] = next((definitions[d] for d in definitions
                              if f"azurerm_key_vault_managed_hardware_security_module_role_definition.{d}." in ref), None)
        scope = resolve(a.get("scope", ""), locals_)
        check(scope.startswith("/keys/") and len(scope) > len("/keys/") and "*" not in scope,
              f"azure: HSM grant {name} is scoped to the one key, never \"/\" or \"/keys\" ({scope})")
    check(set(assignments) == {"servers", "servers_wrap", "rotator"},
          f"azure: HSM grants are the servers', the writing servers' and the rotator's ({sorted(assignments)})")
    check(granted.get("servers") == [hsm + "decrypt/action"], f"azure: the servers only decrypt ({granted.get('servers')})")
    check("servers_write_keyset" in str(assignments.get("servers_wrap", {}).get("count", "")),
          "azure: the servers wrap only with servers_write_keyset")
    check(granted.get("rotator") == wrap and granted.get("servers_wrap") == wrap, "azure: the rotator, and servers that write, wrap and unwrap")

    accounts = resources(doc, "azurerm_storage_account")
    check(len(accounts) == 1, "azure: one keyset storage account")
    for name, a in accounts.items():
        check(value(a.get("shared_access_key_enabled")) is False, f"azure: account {name} has shared key access disabled")
        check(value(a.get("allow_nested_items_to_be_public")) is False, f"azure: account {name} allows no public blob access")
        check(value(a.get("min_tls_version")) == "TLS1_2", f"azure: account {name} requires TLS 1.2")
        check(value(a.get("https_traffic_only_enabled", True)) is True, f"azure: account {name} is HTTPS only")
        check(value(a.get("infrastructure_encryption_enabled")) is True, f"azure: account {name} has infrastructure encryption")
        props = (a.get("blob_properties") or [{}])[0]
        check(value(props.get("versioning_enabled")) is True, f"azure: account {name} versions blobs")
        check(bool(props.get("delete_retention_policy")) and bool(props.get("container_delete_retention_policy")),
              f"azure: account {name} soft-deletes blobs and containers")
        rules = (a.get("network_rules") or [{}])[0]
        check(value(rules.get("default_action")) == "Deny", f"azure: account {name}'s firewall denies by default")
        check(prevent_destroy(a), f"azure: account {name} has prevent_destroy")
    containers = resources(doc, "azurerm_storage_container")
    check(len(containers) == 1 and all(value(c.get("container_access_type")) == "private" for c in containers.values()),
          "azure: one private keyset container")

    # Storage roles: custom, blob data actions only, no delete; granted on the
    # container under a condition naming the keyset blob and its newest copy.
    roles = {n: sorted(value(a) for p in r.get("permissions", []) for a in p.get("data_actions", []))
             for n, r in resources(doc, "azurerm_role_definition").items()}
    check(sorted(roles.values()) == [[blob + "add/action", blob + "read", blob + "write"], [blob + "read"]],
          f"azure: custom storage roles are exactly read, and read + create + replace, of blobs ({roles})")
    check(all(not p.get("actions") for r in resources(doc, "azurerm_role_definition").values() for p in r.get("permissions", [])),
          "azure: custom storage roles grant no control-plane actions")
    grants = resources(doc, "azurerm_role_assignment")
    check({"servers", "rotator", "operators"} <= set(grants), "azure: the servers, the rotator and the operators have container grants")
    for name, g in grants.items():
        scope = value(g.get("scope", ""))
        check(scope.startswith("${azurerm_storage_container.") and scope.endswith(".id}"),
              f"azure: grant {name} is scoped to the container, not the account, group or subscription ({scope})")
        check("role_definition_name" not in g and "azurerm_role_definition." in str(g.get("role_definition_id")),
              f"azure: grant {name} uses a stateseal custom role")
        # Each role it may hold, with the condition it then carries (`x ? a : b` pairs branch by branch).
        pairs = list(zip(branches(g.get("role_definition_id", "")), branches(g.get("condition", ""))))
        check(bool(pairs) and all(
            resolve(c, locals_).count("blobs:path] StringEquals") == 2 and ".newest'" in resolve(c, locals_)
            and all(f"ActionMatches{{'{a}'}}" in resolve(c, locals_) for a in roles.get(role_name(r), [None]))
            for r, c in pairs),
            f"azure: every blob action of grant {name} is conditioned on the keyset blob and its newest copy")
    servers_role = str(grants.get("servers", {}).get("role_definition_id"))
    check(servers_role.startswith("${var.servers_write_keyset ?") and servers_role.rstrip("}").endswith("keyset_reader.role_definition_resource_id"),
          "azure: the servers read the keyset unless servers_write_keyset")
    credentials = resources(doc, "azurerm_federated_identity_credential")
    check(len(credentials) == 2 and all(
        value(c.get("subject", "")).startswith("system:serviceaccount:")
        and [value(a) for a in c.get("audience", [])] == ["api://AzureADTokenExchange"] for c in credentials.values()),
        "azure: the identities federate only to the servers' and the rotator's Kubernetes service accounts")


RULES = {"vault": check_vault, "aws-kms": check_aws, "gcp-kms": check_gcp, "azure-kv": check_azure}

modules = sorted(p.name for p in ROOT.iterdir() if p.is_dir())
check(bool(modules), "terraform/ has modules")
for module in modules:
    doc = load(module)
    check("output" in doc, f"{module}: has outputs")
    outputs = {k for block in doc.get("output", []) for k in block}
    names = {o.strip('"') for o in outputs}
    check("kek_uri" in names, f"{module}: outputs kek_uri")
    if module in ("vault", "aws-kms", "gcp-kms", "azure-kv"):
        check("store_uri" in names, f"{module}: outputs store_uri")
    if module in RULES:
        RULES[module](doc)

if failures:
    print(f"{len(failures)} terraform check(s) failed", file=sys.stderr)
    sys.exit(1)
print("terraform checks passed")
