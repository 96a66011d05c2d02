// kafkajs over TLS, writing an NSS key log: node tls.js BOOTSTRAP TOPIC COUNT CA_PEM KEYLOG TLS_VERSION CIPHERS
// Produces COUNT records to TOPIC, then one consumer of group kafkajs-tls-group reads them back and commits.
// The key log: kafkajs lets a socket factory make its sockets; this one is kafkajs's own (tls.connect with the
// `ssl` options) plus a listener on Node's 'keylog' event, which hands over each TLS secret as an NSS key log line.
// Prints {"produced": N, "consumed": M}.
const fs = require('fs')
const net = require('net')
const tls = require('tls')
const { Kafka, logLevel } = require('kafkajs')

const [bootstrap, topic, count, caPem, keylog, tlsVersion, ciphers] = process.argv.slice(2)

function keylogSocketFactory ({ host, port, ssl, onConnect }) {
  const socket = tls.connect(
    Object.assign({ host, port }, !net.isIP(host) ? { servername: host } : {}, ssl),
    onConnect
  )
  socket.on('keylog', (line) => fs.appendFileSync(keylog, line))
  socket.setKeepAlive(true, 60000)
  return socket
}

const ssl = { ca: [fs.readFileSync(caPem, 'utf-8')], minVersion: tlsVersion, maxVersion: tlsVersion }
if (ciphers) ssl.ciphers = ciphers

const kafka = new Kafka({
  clientId: 'kafkajs-tls',
  brokers: [bootstrap],
  ssl,
  socketFactory: keylogSocketFactory,
  logLevel: logLevel.ERROR,
  retry: { retries: 2, initialRetryTime: 300 },
  connectionTimeout: 5000,
})

async function main () {
  const producer = kafka.producer({ allowAutoTopicCreation: false })
  await producer.connect()
  const messages = []
  for (let i = 0; i < Number(count); i++) {
    messages.push({ key: `key-${i % 7}`, value: JSON.stringify({ order_id: i, client: 'kafkajs', tls: tlsVersion }) })
  }
  await producer.send({ topic, messages, acks: -1 })
  await producer.disconnect()

  const consumer = kafka.consumer({ groupId: 'kafkajs-tls-group', sessionTimeout: 10000, heartbeatInterval: 1000,
    maxWaitTimeInMs: 1000 })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  let consumed = 0
  await new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, 25000) // bounded: stop after 25 s whatever was read
    consumer.run({
      eachMessage: async () => {
        consumed += 1
        if (consumed >= Number(count)) { clearTimeout(timer); setTimeout(resolve, 1500) } // let the commit go out
      },
    }).catch(reject)
  })
  await consumer.disconnect()
  console.log(JSON.stringify({ produced: Number(count), consumed }))
}

main().catch((err) => {
  console.error(`${err.name}: ${err.message}`)
  process.exit(1)
})
