// The task list page: who is signed in, the person's tasks, a form to add one with an
// optional reminder time (the createTask Function queues the reminder). Uses the platform's
// browser SDK only (no tokens in page scripts).
const who = document.getElementById('who')
const form = document.getElementById('new-task')
const problem = document.getElementById('problem')
const list = document.getElementById('tasks')

async function refresh() {
  const tasks = await fetch('/rest/v1/tasks?select=id,title,done,remind_at,reminded_at&order=created_at.desc').then((r) => r.json())
  list.replaceChildren(...tasks.map((task) => {
    const item = document.createElement('li')
    item.textContent = (task.done ? '✓ ' : '') + task.title
    if (task.remind_at) {
      const reminder = document.createElement('span')
      reminder.className = 'reminder'
      const when = new Date(task.remind_at).toLocaleString()
      reminder.textContent = task.reminded_at ? ` (reminded, ${when})` : ` (reminder ${when})`
      item.append(reminder)
    }
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
  // Reminders are queued jobs, which the platform delays by at most seven days.
  const now = Date.now()
  form.elements.remindAt.min = localDateTime(new Date(now))
  form.elements.remindAt.max = localDateTime(new Date(now + 7 * 24 * 60 * 60 * 1000))
  if (user) await refresh()
}

/** A Date as a datetime-local value in the browser's zone ("2030-01-02T09:30"). */
function localDateTime(date) {
  return new Date(date.getTime() - date.getTimezoneOffset() * 60 * 1000).toISOString().slice(0, 16)
}

form.addEventListener('submit', async (event) => {
  event.preventDefault()
  const values = new FormData(form)
  const input = { title: values.get('title') }
  // A datetime-local value ("2030-01-02T09:30") is local time without a zone: the Date
  // constructor reads it in the browser's zone, and toISOString gives the instant in UTC.
  const remindAt = values.get('remindAt')
  if (remindAt) input.remindAt = new Date(remindAt).toISOString()
  problem.hidden = true
  try {
    await service.functions.call('createTask', input)
  } catch (error) {
    problem.textContent = `Could not add the task: ${error.message}`
    problem.hidden = false
    return
  }
  form.reset()
  await refresh()
})

start().catch((error) => { who.textContent = `Something went wrong: ${error.message}` })
