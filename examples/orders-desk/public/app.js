// Shows the orders from GET /api/orders, or how to connect and bind the slot.
const status = document.getElementById('status')
const authOrigin = `${location.protocol}//auth.${location.host.replace(/^[^.]+\./, '')}`

function cell(row, text) {
  const td = document.createElement('td')
  td.textContent = text
  row.append(td)
}

async function show() {
  const response = await fetch('/api/orders', { headers: { accept: 'application/json' } })
  const body = await response.json()
  if (!response.ok) {
    status.textContent = `Could not read orders: ${body.error?.message ?? response.status}`
    return
  }
  if (body.orders === null) {
    status.textContent = body.problem.message
    document.getElementById('code').textContent = body.problem.code
    document.getElementById('connect').href = `${authOrigin}/connections/new?app=orders&integration=orders`
    document.getElementById('setup').hidden = false
    return
  }
  status.textContent = `${body.orders.length} orders`
  const tbody = document.querySelector('#orders tbody')
  for (const order of body.orders) {
    const row = document.createElement('tr')
    cell(row, order.id)
    cell(row, order.customer)
    cell(row, `${order.total.toFixed(2)} ${order.currency}`)
    cell(row, order.status)
    cell(row, new Date(order.placedAt).toLocaleString())
    tbody.append(row)
  }
  document.getElementById('orders').hidden = false
}

show().catch((error) => { status.textContent = `Could not read orders: ${error.message}` })
