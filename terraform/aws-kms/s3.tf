# The keyset bucket: it holds only wrapped keys, but its integrity matters
# (a deleted or rolled-back document stops rotations), so it is versioned,
# private, encrypted and logged.

resource "aws_s3_bucket" "keyset" {
  # checkov:skip=CKV_AWS_144:One small document per fleet; a region outage pauses rotation, cached keys keep serving, and the document can be restored from a version.
  # checkov:skip=CKV_AWS_145:SSE-S3 on purpose: SSE-KMS under the KEK would need kms:Decrypt without stateseal's encryption context, which the key policy forbids; the document holds only KMS-wrapped keys.
  # checkov:skip=CKV2_AWS_62:Servers poll the document every refresh interval; event notifications have no consumer.
  bucket = var.bucket_name
}

resource "aws_s3_bucket_versioning" "keyset" {
  bucket = aws_s3_bucket.keyset.id
  versioning_configuration {
    status = "Enabled"
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "keyset" {
  bucket = aws_s3_bucket.keyset.id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm = "AES256"
    }
  }
}

resource "aws_s3_bucket_public_access_block" "keyset" {
  bucket                  = aws_s3_bucket.keyset.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_ownership_controls" "keyset" {
  bucket = aws_s3_bucket.keyset.id
  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_logging" "keyset" {
  bucket        = aws_s3_bucket.keyset.id
  target_bucket = var.access_log_bucket
  target_prefix = "s3/${var.bucket_name}/"
}

resource "aws_s3_bucket_lifecycle_configuration" "keyset" {
  bucket = aws_s3_bucket.keyset.id
  rule {
    id     = "expire-old-keyset-versions"
    status = "Enabled"
    filter {}
    noncurrent_version_expiration {
      noncurrent_days = 90
    }
    abort_incomplete_multipart_upload {
      days_after_initiation = 1
    }
  }
}
