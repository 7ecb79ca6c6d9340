import { bool, date, id, text } from '../../columns.ts';
import { defineRestStream } from '../rest.ts';

/** Customers (patients: the API's events about them are named Patient). */
export default defineRestStream({
  resource: 'customers',
  path: '/customers',
  idField: 'CustomerId',
  mode: 'incremental',
  variants: ['core'],
  webhook: { events: ['Patient.Created', 'Patient.Updated'], recordUrl: 'customers/{id}' },
  table: {
    name: 'customers',
    columns: {
      company_id: id('CompanyId', { doc: 'The company (location) the customer belongs to: companies.id.' }),
      first_name: text('FirstName', { personal: 'name', doc: "The customer's first name." }),
      last_name: text('LastName', { personal: 'name', doc: "The customer's last name." }),
      email: text('Email', { personal: 'email', doc: "The customer's email address." }),
      mobile_phone: text('MobilePhone', { personal: 'phone', doc: "The customer's mobile phone number, as entered." }),
      is_active: bool('IsActive', { doc: 'Whether the customer is active at the source.' }),
      birthday: date('Birthday', { personal: 'birth date', doc: "The customer's date of birth." }),
      last_visit: date('LastVisit', { doc: "The date of the customer's last visit, as the API reports it." }),
    },
  },
});
