// The task list page: who is signed in, the person's tasks, a form to add one. Uses the
// platform's browser SDK only (no tokens in page scripts).
const who = document.getElementById('who')
const form = document.getElementById('new-task')
const list = document.getElementById('tasks')

async function refresh() {
  const tasks = await fetch('/rest/v1/tasks?select=id,title,done&order=created_at.desc').then((r) => r.json())
  list.replaceChildren(...tasks.map((task) => {
    const item = document.createElement('li')
    item.textContent = (task.done ? '✓ ' : '') + task.title
    return item
  }))
}

async function start() {
  if (typeof service === 'undefined') {
    who.textContent = 'The platform SDK is not available.'
    return
  }
  const user = await service.auth.currentUser()
  who.textContent = user ? `Signed in as ${user.email ?? user.id}` : 'Not signed in.'
  form.hidden = !user
  if (user) await refresh()
}

form.addEventListener('submit', async (event) => {
  event.preventDefault()
  const title = new FormData(form).get('title')
  await service.functions.call('createTask', { title })
  form.reset()
  await refresh()
})

start().catch((error) => { who.textContent = `Something went wrong: ${error.message}` })
