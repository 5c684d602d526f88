/**
 * The person's organisation (company): for its confirmed administrators, the members with
 * their organisation roles, the open invitations and a form to invite someone, through
 * `organisationMembers`, `openInvitations` and `inviteToOrganisation` (the `/v1/organisation`
 * routes). Everyone else sees which company they belong to and who to ask; a person without
 * one is pointed to setting one up.
 */
import type { Hono } from 'hono'
import { escapeHtml, hidden } from '../lib/html.ts'
import { inviteToOrganisation, isOrganisationAdmin, openInvitations, organisationMembers } from '../identity/index.ts'
import { doneRedirect, formOf, pageCsrf, signedIn, type DashboardDeps, type DashboardEnv } from './context.ts'
import { badge, card, notice, pageHead, table, time } from './format.ts'
import { shell } from './layout.ts'

export function registerOrganisation(routes: Hono<DashboardEnv>, deps: DashboardDeps): void {
  routes.get('/dashboard/organisation', async (c) => {
    const person = await signedIn(c, deps)
    if (person instanceof Response) return person
    const csrf = pageCsrf(c, deps)
    const head = pageHead({ title: 'Organisation', lede: 'Your company: its people and invitations.' })
    if (person.organisationId === null) {
      return shell(c, {
        title: 'Organisation', person, csrf, top: 'organisation',
        body: `${head}${notice('info', `<strong>You do not belong to a company yet</strong>
          <p>Set one up (you become its administrator), or accept an invitation from an administrator of yours.</p>
          <p><a class="button" href="/company">Set up a company</a></p>`)}`,
      })
    }
    if (!isOrganisationAdmin(person, person.organisationId)) {
      return shell(c, {
        title: 'Organisation', person, csrf, top: 'organisation',
        body: `${head}${card({ title: 'Your membership', id: 'membership', body: `<p>You are a ${person.organisationRole === 'admin' ? 'administrator (confirm your email to act as one)' : 'member'} of your company.
          Its administrators manage members and invitations.</p>` })}`,
      })
    }
    const [{ organisation, members }, invitations] = await Promise.all([
      organisationMembers(deps.db, { user: person }),
      openInvitations(deps.db, deps.clock, { user: person }),
    ])
    const done = c.req.query('done') === 'invited' ? notice('ok', '<p>Invitation sent. The link works for 7 days.</p>') : ''
    return shell(c, {
      title: 'Organisation', person, csrf, top: 'organisation',
      body: `${pageHead({ title: organisation.name, lede: 'Your company: its people and invitations.' })}${done}
        ${card({
          title: 'Members', id: 'members',
          body: table({
            caption: 'Members of the company',
            head: ['Person', 'Role', 'Email'],
            rows: members.map((member) => [
              `${escapeHtml(member.displayName ?? member.email)}${member.displayName ? `<div class="muted small-text">${escapeHtml(member.email)}</div>` : ''}`,
              member.role === 'admin' ? badge('Administrator', 'info') : badge('Member'),
              member.confirmed ? badge('Confirmed', 'ok') : badge('Not confirmed', 'warn'),
            ]),
            empty: 'No members.',
          }),
        })}
        ${card({
          title: 'Invitations', id: 'invitations',
          body: `${table({
            caption: 'Open invitations',
            head: ['Email', 'Invited by', 'Sent', 'Expires'],
            rows: invitations.map((invitation) => [escapeHtml(invitation.email), escapeHtml(invitation.invitedBy ?? ''), time(invitation.createdAt), time(invitation.expiresAt)]),
            empty: 'No open invitations.',
          })}
          <h3>Invite someone</h3>
          <form class="row" method="post" action="/dashboard/organisation/invitations">${hidden('csrf', csrf)}
            <div class="field"><label for="invite-email">Email address</label><input id="invite-email" name="email" type="email" required autocomplete="off" placeholder="ana@example.com"></div>
            <button>Send invitation</button></form>
          <p class="muted small-text">They get an email with a link to join; they join as a member.</p>`,
        })}`,
    })
  })

  routes.post('/dashboard/organisation/invitations', async (c) => {
    const person = await signedIn(c, deps)
    if (person instanceof Response) return person
    const form = await formOf(c, deps)
    await inviteToOrganisation(deps, { user: person, email: form.email })
    return doneRedirect(c, '/dashboard/organisation', 'invited')
  })
}
