// Produce about MB megabytes to TOPIC (3 partitions, created first) with kafkajs, SIZE-byte values, PER_SEND
// messages a send. metadataMaxAge 0: kafkajs refreshes the cluster metadata before a send once a millisecond has
// passed since the last refresh, and each send waits for the clock to move on, so the capture holds a Metadata
// round trip between each two Produce requests (byte-heavy traffic with many small responses).
// Usage: node produce.js BOOTSTRAP TOPIC MB SIZE PER_SEND   (prints {"sends": N, "bytes": B})
const { Kafka, logLevel } = require('kafkajs')

const [bootstrap, topic, mb, size, perSend] = process.argv.slice(2)
const kafka = new Kafka({ clientId: 'kafkajs-bytes', brokers: [bootstrap], logLevel: logLevel.ERROR })

async function main () {
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic, numPartitions: 3 }] })
  await admin.disconnect()
  const producer = kafka.producer({ metadataMaxAge: 0, allowAutoTopicCreation: false })
  await producer.connect()
  const total = Number(mb) * 1024 * 1024
  let sent = 0
  let sends = 0
  while (sent < total) {
    const messages = []
    for (let i = 0; i < Number(perSend); i++) {
      // Printable, varied values: a repeated letter would compress into nothing on the wire if a codec were set.
      const value = Buffer.alloc(Number(size), `order ${sends}-${i} `)
      messages.push({ key: `k${sends % 97}`, value })
    }
    const last = Date.now()
    while (Date.now() === last) await new Promise(resolve => setTimeout(resolve, 1))
    await producer.send({ topic, messages, acks: 1 })
    sent += Number(size) * Number(perSend)
    sends++
  }
  await producer.disconnect()
  console.log(JSON.stringify({ sends, bytes: sent }))
}

main().catch(err => { console.error(err); process.exit(1) })
