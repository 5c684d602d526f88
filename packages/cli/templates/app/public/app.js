// The page: who is signed in, their notes (read through the data API, row-level security
// applies), and a form that calls the addNote Function. Uses the platform's browser SDK
// only: no tokens in page scripts.
const who = document.getElementById('who')
const form = document.getElementById('new-note')
const problem = document.getElementById('problem')
const list = document.getElementById('notes')

async function refresh() {
  const notes = await fetch('/rest/v1/notes?select=id,text,created_at&order=created_at.desc&limit=100').then((r) => r.json())
  list.replaceChildren(...notes.map((note) => {
    const item = document.createElement('li')
    item.textContent = note.text
    return item
  }))
}

async function start() {
  const user = await service.auth.currentUser()
  if (!user) {
    who.innerHTML = '<a id="sign-in">Sign in</a> to write notes.'
    document.getElementById('sign-in').href = service.auth.signInUrl()
    return
  }
  who.textContent = `Signed in as ${user.email ?? user.id}`
  form.hidden = false
  await refresh()
}

form.addEventListener('submit', async (event) => {
  event.preventDefault()
  problem.hidden = true
  try {
    await service.functions.call('addNote', { text: new FormData(form).get('text') })
  } catch (error) {
    problem.textContent = `Could not add the note: ${error.message}`
    problem.hidden = false
    return
  }
  form.reset()
  await refresh()
})

start().catch((error) => {
  who.textContent = `Something went wrong: ${error.message}`
})
