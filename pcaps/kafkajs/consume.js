// Read TOPIC back from its beginning with a kafkajs consumer (group GROUP) until COUNT messages have come, as a
// service catching up on a topic does: byte-heavy Fetch responses, the group's JoinGroup/SyncGroup/Heartbeat and
// offset commits between them.
// Usage: node consume.js BOOTSTRAP TOPIC GROUP COUNT   (prints {"messages": N, "bytes": B})
const { Kafka, logLevel } = require('kafkajs')

const [bootstrap, topic, group, count] = process.argv.slice(2)
const kafka = new Kafka({ clientId: 'kafkajs-reader', brokers: [bootstrap], logLevel: logLevel.ERROR })

async function main () {
  const consumer = kafka.consumer({ groupId: group })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  let messages = 0
  let bytes = 0
  await new Promise((resolve, reject) => {
    consumer.run({
      eachBatch: async ({ batch }) => {
        for (const m of batch.messages) {
          messages++
          bytes += m.value ? m.value.length : 0
        }
        if (messages >= Number(count)) resolve()
      }
    }).catch(reject)
  })
  await consumer.disconnect()
  console.log(JSON.stringify({ messages, bytes }))
}

main().catch(err => { console.error(err); process.exit(1) })
