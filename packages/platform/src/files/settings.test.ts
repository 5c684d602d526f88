/** FILES_* configuration (config.ts): defaults, S3 settings and the refusals that name the setting. */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { ConfigError, loadConfig } from '../config.ts'

describe('FILES_* settings', () => {
  test('by default files are on local disk with a 128 MiB limit', () => {
    const config = loadConfig({})
    assert.deepEqual(config.files, { maxFileBytes: 128 * 1024 * 1024, s3: null })
  })

  test('FILES_MAX_FILE_MB sets the limit; 0 or a non-number is refused naming it', () => {
    assert.equal(loadConfig({ FILES_MAX_FILE_MB: '16' }).files.maxFileBytes, 16 * 1024 * 1024)
    assert.throws(() => loadConfig({ FILES_MAX_FILE_MB: '0' }), (error: unknown) => error instanceof ConfigError && /FILES_MAX_FILE_MB/.test(error.message))
    assert.throws(() => loadConfig({ FILES_MAX_FILE_MB: 'lots' }), /FILES_MAX_FILE_MB/)
  })

  test('FILES_S3_BUCKET selects S3, with path style on for an endpoint and the defaults', () => {
    const config = loadConfig({
      FILES_S3_BUCKET: 'files', FILES_S3_ENDPOINT: 'http://minio:9000', FILES_S3_ACCESS_KEY_ID: 'id', FILES_S3_SECRET_ACCESS_KEY: 'secret',
    })
    assert.deepEqual(config.files.s3, {
      bucket: 'files', prefix: '', region: 'us-east-1', endpoint: 'http://minio:9000', accessKeyId: 'id', secretAccessKey: 'secret', forcePathStyle: true,
    })
    const aws = loadConfig({ FILES_S3_BUCKET: 'files', FILES_S3_REGION: 'eu-west-1', FILES_S3_PREFIX: 'svc/', FILES_S3_ACCESS_KEY_ID: 'id', FILES_S3_SECRET_ACCESS_KEY: 'secret' })
    assert.equal(aws.files.s3?.forcePathStyle, false)
    assert.equal(aws.files.s3?.endpoint, null)
    assert.equal(aws.files.s3?.prefix, 'svc/')
    assert.equal(aws.files.s3?.region, 'eu-west-1')
  })

  test('a bucket without keys, or an endpoint that is not http(s), is refused naming the setting', () => {
    assert.throws(() => loadConfig({ FILES_S3_BUCKET: 'files' }), /FILES_S3_ACCESS_KEY_ID and FILES_S3_SECRET_ACCESS_KEY/)
    assert.throws(() => loadConfig({ FILES_S3_BUCKET: 'files', FILES_S3_ENDPOINT: 'minio:9000', FILES_S3_ACCESS_KEY_ID: 'a', FILES_S3_SECRET_ACCESS_KEY: 'b' }), /FILES_S3_ENDPOINT/)
    assert.throws(() => loadConfig({ FILES_S3_BUCKET: 'files', FILES_S3_FORCE_PATH_STYLE: 'maybe', FILES_S3_ACCESS_KEY_ID: 'a', FILES_S3_SECRET_ACCESS_KEY: 'b' }), /FILES_S3_FORCE_PATH_STYLE/)
  })
})
