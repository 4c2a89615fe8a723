# The keyset bucket: it holds only KMS-wrapped keys, but its integrity matters
# (a deleted or rolled-back document stops rotations), so it is private,
# versioned, soft-delete protected, logged and protected from `terraform destroy`.

resource "google_storage_bucket" "keyset" {
  project                     = var.project
  name                        = var.bucket_name
  location                    = var.bucket_location
  storage_class               = "STANDARD"
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = false

  # Every overwritten document stays as a noncurrent version: what the fleet
  # used can be audited and restored (instances refuse a rolled-back generation).
  versioning {
    enabled = true
  }

  # A deleted object or version stays recoverable for this long.
  soft_delete_policy {
    retention_duration_seconds = var.soft_delete_seconds
  }

  lifecycle_rule {
    condition {
      days_since_noncurrent_time = 90
      with_state                 = "ARCHIVED"
    }
    action {
      type = "Delete"
    }
  }

  logging {
    log_bucket = var.access_log_bucket
  }

  lifecycle {
    prevent_destroy = true
  }
}

locals {
  # IAM conditions name objects as projects/_/buckets/<bucket>/objects/<object>.
  keyset_resource = "projects/_/buckets/${google_storage_bucket.keyset.name}/objects/${var.keyset_object}"
}

# Exactly what stateseal does to the document: read it, and write it
# conditionally (an overwrite needs delete on the replaced generation).
resource "google_project_iam_custom_role" "keyset_reader" {
  project     = var.project
  role_id     = "statesealKeysetReader"
  title       = "stateseal keyset reader"
  description = "Reads the stateseal keyset document."
  permissions = ["storage.objects.get"]
}

resource "google_project_iam_custom_role" "keyset_writer" {
  project     = var.project
  role_id     = "statesealKeysetWriter"
  title       = "stateseal keyset writer"
  description = "Reads, creates and replaces the stateseal keyset document."
  permissions = ["storage.objects.create", "storage.objects.delete", "storage.objects.get"]
}

# The servers: the document and its newest copy only. Read by default: with
# v2 keys sealing needs no write, and the rotator renews and rotates.
resource "google_storage_bucket_iam_member" "servers" {
  bucket = google_storage_bucket.keyset.name
  role   = var.servers_write_keyset ? google_project_iam_custom_role.keyset_writer.id : google_project_iam_custom_role.keyset_reader.id
  member = "serviceAccount:${var.server_service_account}"
  condition {
    title = "stateseal-keyset-object"
    # The document and the copy of the newest document every writer keeps beside it.
    expression = "resource.name == \"${local.keyset_resource}\" || resource.name == \"${local.keyset_resource}.newest\""
  }
}

# The rotator (`stateseal rotate --if-due` on a schedule, deploy/kubernetes
# CronJob): create and replace the same two objects.
resource "google_storage_bucket_iam_member" "rotator" {
  count  = var.rotator_service_account == null ? 0 : 1
  bucket = google_storage_bucket.keyset.name
  role   = google_project_iam_custom_role.keyset_writer.id
  member = "serviceAccount:${var.rotator_service_account}"
  condition {
    title = "stateseal-keyset-object"
    # The document and the copy of the newest document every writer keeps beside it.
    expression = "resource.name == \"${local.keyset_resource}\" || resource.name == \"${local.keyset_resource}.newest\""
  }
}

# The operators (`stateseal init`, `rotate`): create and replace the same two objects.
resource "google_storage_bucket_iam_member" "operators" {
  for_each = toset(var.operator_members)
  bucket   = google_storage_bucket.keyset.name
  role     = google_project_iam_custom_role.keyset_writer.id
  member   = each.value
  condition {
    title = "stateseal-keyset-object"
    # The document and the copy of the newest document every writer keeps beside it.
    expression = "resource.name == \"${local.keyset_resource}\" || resource.name == \"${local.keyset_resource}.newest\""
  }
}
