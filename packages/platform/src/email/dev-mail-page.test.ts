import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { linkify, renderDevMailPage } from './dev-mail-page.ts'

describe('development mailbox page rendering', () => {
  test('linkify links http and https URLs and escapes the text around them', () => {
    assert.equal(
      linkify('a < b, see http://x.test/p?q=1&r=2 now'),
      'a &lt; b, see <a href="http://x.test/p?q=1&amp;r=2" rel="noopener noreferrer">http://x.test/p?q=1&amp;r=2</a> now',
    )
    assert.equal(linkify('HTTPS://X.test'), '<a href="HTTPS://X.test" rel="noopener noreferrer">HTTPS://X.test</a>')
  })

  test('linkify leaves sentence punctuation and an unopened parenthesis outside the link', () => {
    assert.equal(linkify('Go to https://x.test/a.'), 'Go to <a href="https://x.test/a" rel="noopener noreferrer">https://x.test/a</a>.')
    assert.equal(linkify('(https://x.test/a)'), '(<a href="https://x.test/a" rel="noopener noreferrer">https://x.test/a</a>)')
    assert.equal(
      linkify('https://x.test/wiki/A_(b)'),
      '<a href="https://x.test/wiki/A_(b)" rel="noopener noreferrer">https://x.test/wiki/A_(b)</a>',
    )
  })

  test('linkify never links other schemes or breaks out of the attribute', () => {
    assert.equal(linkify('javascript:alert(1)'), 'javascript:alert(1)')
    assert.equal(linkify('data:text/html,<b>x</b>'), 'data:text/html,&lt;b&gt;x&lt;/b&gt;')
    const out = linkify('https://x.test/"onmouseover="alert(1)')
    assert.ok(!out.includes('"onmouseover'), out)
    assert.equal(linkify('https://'), 'https://')
  })

  test('the page escapes the filter it names in its heading', () => {
    const html = renderDevMailPage([], { to: '<b>x</b>@acme.test', nonce: 'n0' })
    assert.ok(html.includes('&lt;b&gt;x&lt;/b&gt;@acme.test'))
    assert.ok(!html.includes('<b>'))
  })
})
