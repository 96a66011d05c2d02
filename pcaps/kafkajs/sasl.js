// kafkajs authenticating with SASL: node sasl.js HOST:PORT MECHANISM USER PASSWORD
// Lists the topics once authenticated; exits non-zero with the broker's answer when authentication fails.
const { Kafka, logLevel } = require('kafkajs')

const [bootstrap, mechanism, username, password] = process.argv.slice(2)

async function main() {
  const kafka = new Kafka({
    clientId: `kafkajs-${username}`,
    brokers: [bootstrap],
    sasl: { mechanism, username, password },
    logLevel: logLevel.NOTHING,
    retry: { retries: 1, initialRetryTime: 300 },
    connectionTimeout: 3000,
    authenticationTimeout: 3000,
  })
  const admin = kafka.admin()
  try {
    await admin.connect()
    console.log(JSON.stringify(await admin.listTopics()))
  } finally {
    await admin.disconnect()
  }
}

main().catch((err) => {
  console.error(`${err.name}: ${err.message}`)
  process.exit(1)
})
