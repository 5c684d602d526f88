import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { contentSecurityPolicy, escapeHtml, scriptJson } from './html.ts'

describe('HTML and script-data escaping', () => {
  test('escapeHtml escapes the five HTML-significant characters', () => {
    assert.equal(escapeHtml(`<a href="x" title='y'>&</a>`), '&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;')
  })

  test('scriptJson cannot close the script element, open a comment or break a line, and reads back as the value', () => {
    const value = '</script><script>alert(1)</script><!-- & \u2028\u2029 "q"'
    const text = scriptJson(value)
    assert.doesNotMatch(text, /[<>&\u2028\u2029]/)
    assert.equal(JSON.parse(text), value)
    assert.deepEqual(JSON.parse(scriptJson({ a: ['</x>'] })), { a: ['</x>'] })
  })

  test('the policy allows scripts and styles by nonce only', () => {
    const policy = contentSecurityPolicy({ nonce: 'abc' })
    assert.match(policy, /script-src 'nonce-abc'/)
    assert.match(policy, /style-src 'nonce-abc'/)
    assert.doesNotMatch(policy, /unsafe-inline/)
    assert.match(policy, /frame-ancestors 'none'/)
    assert.match(contentSecurityPolicy({ nonce: 'n', formAction: "'none'" }), /form-action 'none'/)
  })
})
